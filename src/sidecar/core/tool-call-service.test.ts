import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../api/run-policy.ts";
import { createSidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import { ApprovalBook } from "./approvals.ts";
import { PolicyHolder } from "./policy-holder.ts";
import { createResultSink, type ResultSink } from "./run-result.ts";
import { RunSession } from "./run-session.ts";
import { ToolCallService } from "./tool-call-service.ts";

// Which calls the service remembers (for retries and waits) when prompts pile up: the oldest settled calls are
// forgotten first, pending ones never, and the pending-prompt gauge follows every prompt raised and settled.
const sandbox = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };

function setup(maxRecords: number, maxRecordChars?: number, extra: { maxPendingCalls?: number; ceiling?: Record<string, "allow" | "ask" | "deny">; result?: ResultSink } = {}) {
  const workdir = realpathSync(mkdtempSync(join(tmpdir(), "leviath-calls-")));
  writeFileSync(join(workdir, "a.txt"), "a");
  writeFileSync(join(workdir, "big.txt"), "x".repeat(100_000));
  const policy = RunPolicySchema.parse({
    agent: { key: "ns/app", name: "app" },
    stages: [{ name: "one", sandbox }],
    entryStage: "one",
    launch: { mode: "interactive", allow: [] },
    toolPermissions: { blueprint: {}, ceiling: extra.ceiling ?? {}, allowBlueprintPermissions: false },
    readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
    taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
    limits: { interactionTimeoutSeconds: 0, shellTimeoutSeconds: 60 },
  });
  const source = { description: "test", fingerprint: () => "1", load: () => ({ ok: true as const, value: policy, warnings: [] }) };
  const opened = PolicyHolder.open(source, { workdir, home: undefined }, { loaded() {}, failed() {} });
  if (!opened.ok) throw new Error(opened.error);
  const metrics = createSidecarMetrics();
  const approvals = new ApprovalBook(Date.now, (kind, n) => metrics.pendingApprovals(kind, n));
  const service = new ToolCallService({
    policy: () => opened.holder.current(), workdir, fs: { realpath: (p) => realpathSync.native(p) },
    session: new RunSession({ journal: null, entryStage: 0, onJournalError: () => {} }), approvals,
    audit: { gate: () => true, decision: () => true, flush() {}, close() {} }, metrics,
    shell: { label: "local", run: async () => ({ exitCode: 0, stdout: "", stderr: "", timedOut: false }) },
    log: pino({ level: "silent" }), clock: Date.now, monotonicMs: () => performance.now(), runName: "app", maxRecords, ...(maxRecordChars === undefined ? {} : { maxRecordChars }),
    ...(extra.maxPendingCalls === undefined ? {} : { maxPendingCalls: extra.maxPendingCalls }),
    ...(extra.result ? { result: extra.result } : {}),
  });
  // A write asks for the tool's approval (interactive mode): it stays pending. A read in the workdir settles at once.
  const write = async (id: string) => expect((await service.submit({ id, tool: "write_file", args: { path: "b.txt", content: "b" } }))).toMatchObject({ kind: "ask" });
  const read = async (id: string) => expect((await service.submit({ id, tool: "read_file", args: { path: "a.txt" } }))).toMatchObject({ kind: "allow" });
  const pendingGauge = async () => (await metrics.registry.getSingleMetric("leviath_sidecar_pending_approvals")!.get()).values.find((v) => v.labels["prompt"] === "tool_approval")?.value;
  const remembered = (ids: string[]) => ids.filter((id) => service.get(id) !== undefined);
  return { service, approvals, write, read, pendingGauge, remembered };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
const ids = (prefix: string, n: number, from = 0) => Array.from({ length: n }, (_, i) => `${prefix}${i + from}`);

describe("ToolCallService records", () => {
  it("forgets the oldest submitted settled call first, even one that settled after younger ones", async () => {
    const s = setup(5);
    for (const id of ids("w", 3)) await s.write(id);
    for (const id of ids("r", 10)) await s.read(id);
    expect(s.remembered([...ids("w", 3), ...ids("r", 10)])).toEqual(["w0", "w1", "w2", "r8", "r9"]);
    // w0 settles now, after r8 and r9, but it was submitted before them: it goes first.
    expect(s.service.answer("tool-w0", "deny")).toBe(true);
    await settle();
    expect(s.service.get("w0")).toMatchObject({ kind: "deny", refusal: "refused" });
    await s.read("r10");
    expect(s.remembered(["w0", "w1", "w2", "r8", "r9", "r10"])).toEqual(["w1", "w2", "r8", "r9", "r10"]);
    await s.read("r11");
    expect(s.remembered(["w1", "w2", "r8", "r9", "r10", "r11"])).toEqual(["w1", "w2", "r9", "r10", "r11"]);
    // A forgotten id is a new call; a remembered one is answered from its record.
    expect((await s.service.submit({ id: "r9", tool: "read_file", args: { path: "other.txt" } }))).toMatchObject({ kind: "deny", refusal: "conflict" });
  });

  it("keeps every pending call and counts every prompt with thousands pending, more than the records it keeps", async () => {
    const s = setup(100, undefined, { maxPendingCalls: 5000 });
    for (const id of ids("w", 2000)) await s.write(id);
    expect(await s.pendingGauge()).toBe(2000);
    for (const id of ids("r", 50)) await s.read(id);
    // Over the limit with pending calls alone: each settled call is kept only until the next one comes.
    expect(s.remembered(ids("r", 50))).toEqual(["r49"]);
    expect(s.remembered(ids("w", 2000))).toHaveLength(2000);
    for (let i = 0; i < 2000; i += 2) expect(s.service.answer(`tool-w${i}`, "deny")).toBe(true);
    await settle();
    expect(await s.pendingGauge()).toBe(1000);
    expect(s.approvals.list()).toHaveLength(1000);
    // The next calls forget the settled ones, oldest first, down to the limit, and never a pending one.
    await s.read("r50");
    const writes = ids("w", 2000);
    expect(s.remembered(writes)).toEqual(writes.filter((_, i) => i % 2 === 1));
    expect(s.remembered(["r49", "r50"])).toEqual(["r50"]);
    expect(s.service.get("w1")).toMatchObject({ kind: "ask" });
    s.service.stop();
    await settle();
    expect(await s.pendingGauge()).toBe(0);
    expect(s.service.get("w1")).toMatchObject({ kind: "deny", refusal: "unavailable" });
  });

  it("forgets the oldest settled calls once what they hold passes the budget, however few they are", async () => {
    const s = setup(10_000, 350_000);
    const big = async (id: string) => {
      const r = await s.service.submit({ id, tool: "read_file", args: { path: "big.txt" } });
      expect(r.body.decision === "allow" && r.body.result.length).toBeGreaterThanOrEqual(100_000);
    };
    for (const id of ids("b", 3)) await big(id);
    await s.write("w0");
    // Three results of 100,000 characters and more fit in 350,000; the fourth passes the budget.
    await big("b3");
    expect(s.remembered(ids("b", 4))).toEqual(["b0", "b1", "b2", "b3"]);
    // The next call forgets the oldest until the rest fit again; small settled calls and pending ones stay.
    await s.read("r0");
    expect(s.remembered(["w0", ...ids("b", 4), "r0"])).toEqual(["w0", "b1", "b2", "b3", "r0"]);
    for (const id of ids("r", 100, 1)) await s.read(id);
    expect(s.remembered(ids("b", 4))).toEqual(["b1", "b2", "b3"]);
    expect(s.service.get("w0")).toMatchObject({ kind: "ask" });
  });

  it("refuses a call once the pending budget is full, and takes calls again when some settle", async () => {
    const s = setup(10_000, undefined, { maxPendingCalls: 3 });
    for (const id of ids("w", 3)) await s.write(id);
    const full = await s.service.submit({ id: "w3", tool: "write_file", args: { path: "x", content: "x" } });
    expect(full).toMatchObject({ kind: "deny", refusal: "unavailable", body: { decision: "deny", code: "pending-full" } });
    expect(s.service.answer("tool-w0", "deny")).toBe(true);
    await settle();
    await s.write("w4");
    expect(s.service.get("w4")).toMatchObject({ kind: "ask" });
  });
});

// Only an allowed submit_output becomes the Run's result: refused by permission, denied by the person asked, or
// failing to be stored, nothing is kept and the runtime is never told `run`.
function withResult(submit: "allow" | "ask" | "deny", failWrites = false) {
  const result = createResultSink("app-result", {
    external: async () => {
      if (failWrites) throw new Error("forbidden");
    },
  });
  return setup(100, undefined, { ceiling: { submit_output: submit }, result });
}

describe("submit_output and the Run's result", () => {
  it("stores an allowed one before answering run", async () => {
    const s = withResult("allow");
    expect((await s.service.submit({ id: "o1", tool: "submit_output", args: { output: "done" } })).body.decision).toBe("run");
    expect(s.service.result).toMatchObject({ inline: "done", callId: "o1", stage: "one" });
  });

  it("stores nothing for one refused by permission, or denied by the person asked", async () => {
    const denied = withResult("deny");
    expect((await denied.service.submit({ id: "o1", tool: "submit_output", args: { output: "x" } })).body).toMatchObject({ decision: "deny", code: "permission-denied" });
    expect(denied.service.result).toBeUndefined();
    const asked = withResult("ask");
    expect((await asked.service.submit({ id: "o2", tool: "submit_output", args: { output: "x" } })).body.decision).toBe("ask");
    expect(asked.service.answer("tool-o2", "deny")).toBe(true);
    await settle();
    expect(asked.service.get("o2")?.body.decision).toBe("deny");
    expect(asked.service.result).toBeUndefined();
  });

  it("refuses (503, never run) when a large output cannot be stored, keeping the earlier result", async () => {
    const s = withResult("allow", true);
    expect((await s.service.submit({ id: "o1", tool: "submit_output", args: { output: "small" } })).body.decision).toBe("run");
    const r = await s.service.submit({ id: "o2", tool: "submit_output", args: { output: "x".repeat(5000) } });
    expect(r).toMatchObject({ kind: "deny", refusal: "unavailable" });
    expect(r.body).toMatchObject({ decision: "deny", code: "result-not-stored" });
    expect(s.service.result).toMatchObject({ inline: "small", callId: "o1" });
  });
});

describe("ToolCallService withdrawals and callers that cannot run tools", () => {
  it("withdraws a call waiting on its prompt: the prompt is closed, the call refused client-gave-up, and nothing runs", async () => {
    const s = setup(100);
    await s.write("w0");
    expect(s.service.withdraw("w0", "cancelled")).toBe(true);
    expect(s.service.withdraw("w0", "cancelled")).toBe(false);
    expect(s.approvals.list()).toEqual([]);
    expect(s.approvals.isWithdrawn("tool-w0")).toBe(true);
    expect(s.service.answer("tool-w0", "allowOnce")).toBe(false);
    await settle();
    expect(s.service.get("w0")).toMatchObject({ kind: "deny", source: "client_gave_up", body: { code: "client-gave-up" } });
    expect(await s.pendingGauge()).toBe(0);
    expect(s.service.withdraw("w0", "cancelled")).toBe(false);
    expect(s.service.withdraw("unknown", "cancelled")).toBe(false);
  });

  it("refuses a call whose prompt was answered but which had not run yet when its client gave up", async () => {
    const s = setup(100);
    await s.write("w1");
    expect(s.service.answer("tool-w1", "allowOnce")).toBe(true);
    // The answer continues the call on a later microtask; the client gives up before that.
    expect(s.service.withdraw("w1", "connection_closed")).toBe(true);
    await settle();
    expect(s.service.get("w1")).toMatchObject({ kind: "deny", body: { code: "client-gave-up" } });
  });

  it("withdraws a call its client did not wait for again before its last deadline", async () => {
    const s = setup(100);
    const first = await s.service.submit({ id: "d0", tool: "write_file", args: { path: "b.txt", content: "b" }, deadline: Date.now() + 10_000 });
    expect(first).toMatchObject({ kind: "ask" });
    s.service.renewDeadline("d0", Date.now() + 30);
    expect(await s.service.wait("d0", 5000)).toMatchObject({ kind: "deny", body: { code: "client-gave-up" } });
    expect(s.approvals.isWithdrawn("tool-d0")).toBe(true);
  });

  it("refuses a tool it would hand back to a caller that cannot run it, before any prompt", async () => {
    const s = setup(100, undefined, { ceiling: { install_tool: "ask" } });
    expect(await s.service.submit({ id: "x0", tool: "install_tool", args: {}, callerRuns: false })).toMatchObject({ kind: "deny", source: "tool_unavailable", body: { code: "tool-unavailable" } });
    expect(s.approvals.list()).toEqual([]);
    expect(await s.service.submit({ id: "x1", tool: "install_tool", args: {} })).toMatchObject({ kind: "ask" });
  });
});
