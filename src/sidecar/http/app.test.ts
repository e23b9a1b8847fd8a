import { mkdirSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RunPolicySchema, type RunPolicy } from "../../api/run-policy.ts";
import { createSidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import { ApprovalBook } from "../core/approvals.ts";
import { buildSidecarApp } from "./app.ts";
import { createLazySchemaCompilers } from "./lazy-schema-compilers.ts";
import type * as LazyCompilers from "./lazy-schema-compilers.ts";

type LazyCompilersModule = typeof LazyCompilers;
import type { LocalApprovals } from "./app-deps.ts";
import type { AuditSink, DecisionRecord } from "../storage/audit-writer.ts";
import { PolicyHolder } from "../core/policy-holder.ts";
import { RunSession } from "../core/run-session.ts";
import { MAX_RUNTIME_WARNINGS, RuntimeWarnings } from "../core/runtime-warnings.ts";
import type { ShellExecutor } from "../executors/shell.ts";

// Every instance the app makes has the lazy schema compilers, and what they load is heard here: nothing, since no
// route declares a schema (the last test).
const schemaCompilerLoads = vi.hoisted(() => [] as string[]);
vi.mock("./lazy-schema-compilers.ts", async (importActual) => {
  const actual = await importActual<LazyCompilersModule>();
  return { ...actual, createLazySchemaCompilers: () => actual.createLazySchemaCompilers((name) => schemaCompilerLoads.push(name)) };
});

const RUNTIME_TOKEN = "runtime-runtime-runtime";
const RUNTIME_AUTH = { authorization: `Bearer ${RUNTIME_TOKEN}` };
import { ToolCallService } from "../core/tool-call-service.ts";

// The service through the app (fastify inject): permission prompts and their scopes, retries, refusals of
// malformed requests, and a failing audit. Real files, a recording shell, no network.
const sandbox = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };

function policyOf(extra: Partial<Record<string, unknown>> = {}): RunPolicy {
  return RunPolicySchema.parse({
    agent: { key: "ns/app", name: "app" },
    stages: [
      { name: "one", sandbox, transitions: [{ to: "two", condition: "llm_choice", hint: "" }, { to: "narrow", condition: "always", hint: "" }] },
      { name: "two", sandbox, transitions: [{ to: "one", condition: "llm_choice", hint: "" }] },
      { name: "narrow", availableTools: ["read_file"], sandbox },
      { name: "last", sandbox, transitions: [] },
    ],
    entryStage: "one",
    launch: { mode: "interactive", allow: [] },
    toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
    readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
    taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
    limits: { interactionTimeoutSeconds: 3600, shellTimeoutSeconds: 60 },
    ...extra,
  });
}

const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

function setup(opts: { audit?: AuditSink; local?: LocalApprovals; policy?: RunPolicy; shellDelayMs?: number } = {}) {
  const workdir = realpathSync(mkdtempSync(join(tmpdir(), "leviath-app-")));
  mkdirSync(join(workdir, "sub"));
  const source = { description: "test", fingerprint: () => "1", load: () => ({ ok: true as const, value: opts.policy ?? policyOf(), warnings: [] }) };
  const opened = PolicyHolder.open(source, { workdir, home: undefined }, { loaded() {}, failed() {} });
  if (!opened.ok) throw new Error(opened.error);
  const commands: string[] = [];
  const shell: ShellExecutor = {
    label: "local",
    run: async (r) => {
      commands.push(r.command);
      await new Promise((done) => setTimeout(done, opts.shellDelayMs ?? 0));
      return { exitCode: 0, stdout: `ran ${r.command}\n`, stderr: "", timedOut: false };
    },
  };
  const metrics = createSidecarMetrics();
  const session = new RunSession({ journal: null, entryStage: 0, onJournalError: () => {} });
  const approvals = new ApprovalBook(Date.now, () => {});
  const audit: AuditSink = opts.audit ?? { gate: () => true, decision: () => true, flush() {}, close() {} };
  const log = pino({ level: "silent" });
  const service = new ToolCallService({
    policy: () => opened.holder.current(), workdir, fs: { realpath: (p) => realpathSync.native(p) }, session, approvals, audit, metrics, shell, log,
    clock: Date.now, monotonicMs: () => performance.now(), runName: "app",
  });
  const app = buildSidecarApp({ service, session, approvals, policy: opened.holder, metrics, log, warnings: new RuntimeWarnings(), localApprovals: opts.local ?? { mode: "token", token: "t0k3n-t0k3n-t0k3n" }, runName: "app",
    guard: { hosts: new Set(["localhost:80"]), runtimeToken: RUNTIME_TOKEN },
  });
  apps.push(app);
  const call = async (id: string, tool: string, args: Record<string, unknown>) => {
    const r = await app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/tool-calls", payload: { id, tool, args } });
    return { status: r.statusCode, body: r.json() as Record<string, unknown> & { approval?: { id: string } } };
  };
  const answer = async (approvalId: string, callId: string, decision: string) => {
    const a = await app.inject({ method: "POST", url: `/v1/approvals/${approvalId}`, payload: { decision }, headers: { authorization: "Bearer t0k3n-t0k3n-t0k3n" } });
    expect(a.statusCode).toBe(200);
    const r = await app.inject({ headers: RUNTIME_AUTH, method: "GET", url: `/v1/tool-calls/${callId}?wait=5` });
    return { status: r.statusCode, body: r.json() as Record<string, unknown> };
  };
  const stage = async (name: string) => (await app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/stage", payload: { stage: name } })).json() as Record<string, unknown>;
  return { app, call, answer, stage, workdir, commands, metrics };
}

describe("tool-approval prompts", () => {
  it("'allow for this stage' lasts until the stage changes, 'allow for this run' for the run", async () => {
    const s = setup();
    const ask = await s.call("w1", "write_file", { path: "a.txt", content: "a" });
    expect(ask.status).toBe(202);
    expect(ask.body.approval).toMatchObject({ id: "tool-w1", kind: "tool_approval", options: ["Allow once", "Allow for this stage", "Allow for this run", "Deny"] });
    expect((await s.answer("tool-w1", "w1", "allowForStage")).body).toMatchObject({ decision: "allow", result: "Wrote 1 bytes to 'a.txt'" });
    expect(readFileSync(join(s.workdir, "a.txt"), "utf8")).toBe("a");
    expect((await s.call("w2", "write_file", { path: "b.txt", content: "b" })).status).toBe(200);
    expect(await s.stage("two")).toEqual({ stage: "two", index: 1, changed: true });
    expect((await s.call("w3", "write_file", { path: "c.txt", content: "c" })).status).toBe(202);
    expect((await s.answer("tool-w3", "w3", "allowForRun")).status).toBe(200);
    await s.stage("one");
    expect((await s.call("w4", "write_file", { path: "d.txt", content: "d" })).status).toBe(200);
  });

  it("keys shell grants by the whole command line, and a decline refuses with upstream's text", async () => {
    const s = setup();
    expect((await s.call("s1", "shell", { command: "ls" })).status).toBe(202);
    expect((await s.answer("tool-s1", "s1", "allowForRun")).body).toMatchObject({ result: "ran ls\n" });
    expect((await s.call("s2", "shell", { command: "ls" })).body).toMatchObject({ decision: "allow" });
    expect((await s.call("s3", "bash", { command: "ls; rm -rf ." })).status).toBe(202);
    const declined = await s.answer("tool-s3", "s3", "deny");
    expect(declined).toEqual({ status: 403, body: { id: "s3", tool: "bash", decision: "deny", code: "approval-declined", message: "[denied] User declined tool call 'bash'." } });
    expect(s.commands).toEqual(["ls", "ls"]);
  });
});

describe("requests", () => {
  it("answers a retried call id with the same answer and never runs it twice; another call under it is a conflict", async () => {
    const s = setup({ policy: policyOf({ launch: { mode: "yolo", allow: [] } }) });
    const first = await s.call("r1", "shell", { command: "date" });
    expect(await s.call("r1", "shell", { command: "date" })).toEqual(first);
    expect(s.commands).toEqual(["date"]);
    expect(await s.call("r1", "shell", { command: "id" })).toMatchObject({ status: 409, body: { code: "duplicate-call-id" } });
  });

  it("answers a retry that arrives while the call is still running with the same answer", async () => {
    const s = setup({ policy: policyOf({ launch: { mode: "yolo", allow: [] } }), shellDelayMs: 100 });
    const [a, b] = await Promise.all([s.call("r2", "shell", { command: "make" }), s.call("r2", "shell", { command: "make" })]);
    expect(a).toEqual(b);
    expect(a.body).toMatchObject({ decision: "allow", result: "ran make\n" });
    expect(s.commands).toEqual(["make"]);
  });

  it("refuses bad arguments, an unavailable tool, oversized and malformed bodies", async () => {
    const s = setup();
    expect(await s.call("a1", "read_file", { path: 42 })).toMatchObject({ status: 400, body: { decision: "deny", code: "invalid-arguments", message: "[error] Invalid arguments for 'read_file': path: Invalid input: expected string, received number" } });
    await s.stage("narrow");
    expect(await s.call("a2", "list_dir", {})).toMatchObject({ status: 403, body: { code: "tool-unavailable", message: "[unavailable] Tool 'list_dir' is not available in stage 'narrow'." } });
    const big = await s.app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/tool-calls", payload: { id: "b", tool: "write_file", args: { path: "x", content: "x".repeat(17 * 1024 * 1024) } } });
    expect(big.statusCode).toBe(413);
    expect(big.json()).toEqual({ decision: "deny", code: "request-too-large", message: "request body exceeded 16 MiB" });
    const bad = await s.app.inject({ method: "POST", url: "/v1/tool-calls", headers: { ...RUNTIME_AUTH, "content-type": "application/json" }, payload: "{nope" });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ decision: "deny", code: "invalid-request" });
    expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/tool-calls", payload: { tool: "shell" } })).json()).toMatchObject({ code: "invalid-call" });
    expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "GET", url: "/v1/nothing" })).statusCode).toBe(404);
    expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/stage", payload: { stage: "nine" } })).statusCode).toBe(404);
  });

  it("records every malformed call as one refusal and one count, and runs none of them", async () => {
    const records: DecisionRecord[] = [];
    const s = setup({ audit: { gate: () => true, decision: (_i, r) => (records.push(r), true), flush() {}, close() {} } });
    const post = (payload: unknown, headers: Record<string, string> = {}) => s.app.inject({ headers: { ...RUNTIME_AUTH, ...headers }, method: "POST", url: "/v1/tool-calls", payload: payload as Record<string, unknown> });
    const notObject = await post({ id: "m1", tool: "shell", args: "make" });
    expect(notObject.statusCode).toBe(400);
    expect(notObject.json()).toEqual({ id: "m1", tool: "shell", decision: "deny", code: "invalid-call", message: "[error] invalid tool call: args: Invalid input: expected record, received string" });
    expect((await post({ id: "m2", tool: 42, args: {} })).json()).toMatchObject({ id: "m2", tool: "42", code: "invalid-call" });
    expect((await post({ tool: "shell", args: { command: "make" } })).json()).toMatchObject({ code: "invalid-call" });
    expect((await post({ id: "m4", tool: "shell", args: { command: "make" } }, { "leviath-deadline": "soon" })).json()).toMatchObject({ id: "m4", code: "invalid-call" });
    expect(records.map((r) => [r.call_id, r.tool_name, r.decision, r.decision_source, r.code])).toEqual([
      ["m1", "shell", "deny", "invalid_arguments", "invalid-call"], ["m2", "42", "deny", "invalid_arguments", "invalid-call"],
      ["", "shell", "deny", "invalid_arguments", "invalid-call"], ["m4", "shell", "deny", "invalid_arguments", "invalid-call"],
    ]);
    const counted = (await s.metrics.registry.getSingleMetricAsString("leviath_sidecar_decisions_total")).split("\n")
      .filter((l) => l.includes('source="invalid_arguments"')).reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
    expect(counted).toBe(4);
    expect(s.commands).toEqual([]);
    // Not remembered: the id of a malformed call is free for the real one.
    expect((await s.call("m1", "read_file", { path: "sub" })).body).not.toMatchObject({ code: "duplicate-call-id" });
  });

  it("labels only results of calls decided 'run'", async () => {
    const s = setup();
    expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/tool-calls/none/result", payload: {} })).statusCode).toBe(404);
    await s.call("x1", "read_file", { path: "sub" });
    expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/tool-calls/x1/result", payload: {} })).json()).toMatchObject({ code: "not-run" });
  });

  it("refuses answers over HTTP in a cluster", async () => {
    const s = setup({ local: { mode: "disabled" } });
    const r = await s.app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/approvals/tool-x", payload: { decision: "allowOnce" } });
    expect(r.statusCode).toBe(403);
    expect(r.json()).toMatchObject({ code: "approvals-by-resource" });
  });

  it("refuses a call whose audit record cannot be written", async () => {
    const failing: AuditSink = { gate: () => false, decision: () => false, flush() {}, close() {} };
    const s = setup({ audit: failing, policy: policyOf({ taint: { tracking: true, allowlist: [], rules: [], toolOverrides: {} } }) });
    const r = await s.call("f1", "read_file", { path: "sub" });
    expect(r).toMatchObject({ status: 503, body: { decision: "deny", code: "audit-failed", message: "[denied] Tool 'read_file' was not run: its audit record could not be written." } });
    expect((await s.metrics.registry.getSingleMetricAsString("leviath_sidecar_audit_write_errors_total"))).toContain("leviath_sidecar_audit_write_errors_total 2");
  });
});

describe("POST /v1/stage", () => {
  const move = async (s: ReturnType<typeof setup>, stage: string) => {
    const r = await s.app.inject({ headers: RUNTIME_AUTH, method: "POST", url: "/v1/stage", payload: { stage } });
    return { status: r.statusCode, body: r.json() as Record<string, unknown> };
  };

  it("follows only a declared transition (any condition), the stage it is in, or the next one where none is declared", async () => {
    const s = setup();
    expect(await move(s, "one")).toEqual({ status: 200, body: { stage: "one", index: 0, changed: false } });
    expect(await move(s, "narrow")).toEqual({ status: 200, body: { stage: "narrow", index: 2, changed: true } });
    // narrow declares no transitions: it falls through to the next stage, and only there.
    expect(await move(s, "one")).toEqual({ status: 403, body: { code: "transition-not-allowed", message: "[error] 'one' is not a stage that stage 'narrow' leads to (last)" } });
    expect(await move(s, "last")).toMatchObject({ status: 200, body: { stage: "last", changed: true } });
    // A terminal stage leads nowhere; an unknown name is not found; the run stays where it was.
    expect(await move(s, "two")).toEqual({ status: 403, body: { code: "transition-not-allowed", message: "[error] 'two' is not a stage that stage 'last' leads to (none: a terminal stage)" } });
    expect(await move(s, "nine")).toMatchObject({ status: 404, body: { code: "unknown-stage" } });
    expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "GET", url: "/v1/stage" })).json()).toEqual({ stage: "last", index: 3, transitions: [] });
  });
});

describe("the runtime's warnings", () => {
  const post = (s: ReturnType<typeof setup>, payload: unknown, headers: Record<string, string> = RUNTIME_AUTH) =>
    s.app.inject({ headers, method: "POST", url: "/v1/warnings", payload: payload as Record<string, unknown> });

  it("are kept once each, in order, served on /v1/status, and bounded with a count of the rest", async () => {
    const s = setup();
    expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "GET", url: "/v1/status" })).json()).not.toHaveProperty("runtimeWarnings");
    const first = await post(s, { warnings: ["stages[0].runtime.hooks: ignored by leviath agent", "stages[0].runtime.hooks: ignored by leviath agent", "x".repeat(600)] });
    expect(first.json()).toEqual({ added: 2, kept: 2, omitted: 0 });
    const status = (await s.app.inject({ headers: RUNTIME_AUTH, method: "GET", url: "/v1/status" })).json() as { runtimeWarnings: string[] };
    expect(status.runtimeWarnings).toEqual(["stages[0].runtime.hooks: ignored by leviath agent", `${"x".repeat(511)}…`]);
    const many = await post(s, { warnings: Array.from({ length: 40 }, (_, i) => `w${i}`) });
    expect(many.json()).toEqual({ added: MAX_RUNTIME_WARNINGS - 2, kept: MAX_RUNTIME_WARNINGS, omitted: 10 });
  });

  it("refuse a body that is not a list of lines, and a caller without the runtime token", async () => {
    const s = setup();
    expect((await post(s, { warnings: [] })).json()).toMatchObject({ code: "invalid-request" });
    expect((await post(s, { warnings: ["a"], level: "error" })).statusCode).toBe(400);
    expect((await post(s, { warnings: ["a"] }, {})).statusCode).toBe(401);
    expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "GET", url: "/v1/status" })).json()).not.toHaveProperty("runtimeWarnings");
  });
});

describe("schema compilers", () => {
  it("serves every route without loading fastify's schema compilers (no route declares a schema)", async () => {
    const s = setup();
    expect((await s.call("c1", "read_file", { path: "nope.txt" })).status).toBeGreaterThanOrEqual(200);
    expect((await s.call("c2", "write_file", { path: "a.txt", content: "a" })).status).toBe(202);
    expect((await s.app.inject({ method: "POST", url: "/v1/tool-calls", headers: { ...RUNTIME_AUTH, "content-type": "application/json" }, payload: "{not json" })).statusCode).toBe(400);
    for (const url of ["/v1/healthz", "/v1/status", "/v1/approvals"]) {
      expect((await s.app.inject({ headers: RUNTIME_AUTH, method: "GET", url })).statusCode).toBeLessThan(500);
    }
    expect(schemaCompilerLoads).toEqual([]);
    // And the loads are heard (the mock is the one the app uses): a validator built loads the compiler.
    createLazySchemaCompilers().buildValidator({}, { customOptions: {}, plugins: [] });
    expect(schemaCompilerLoads).toEqual(["@fastify/ajv-compiler"]);
  });
});
