// Suite `decision` (DESIGN.md §7, first row): the sidecar's decisions in process. The read-path check on real
// trees (the sidecar's small tree, then 10,000 files reached through 50 declared and granted entries mixing
// exact, glob and regex), with realpath(3) and without it (a PathFs that answers lexically, to separate the
// matching from the syscalls), the decision production makes (decideToolCall: permission, then the paths a file
// tool names, then the taint gate), and a whole read_file call through the service, tracing off and on (issue 43).
// Every row checks first that it takes the path it names (a row must never time the wrong branch).
// Run with: node bench/decision-bench.ts [--iterations N]
import { realpathSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import pino from "pino";
import { createSidecarMetrics } from "../src/metrics/sidecar-metrics.ts";
import { EMPTY_RULE_SET, type CompiledRuleSet } from "../src/policy/cel-rules.ts";
import { compileRules } from "../src/policy/cel-library.ts";
import { ContextTaint } from "../src/policy/context-taint.ts";
import { ContextIntegrity } from "../src/policy/context-integrity.ts";
import { decideToolCall, type ToolCallDecision } from "../src/policy/decide-tool-call.ts";
import type { AllowlistRule } from "../src/policy/allowlist.ts";
import { buildReadPathPolicy, resolveRead, type PathFs, type ResolveContext } from "../src/policy/read-paths/index.ts";
import { ApprovalBook } from "../src/sidecar/core/approvals.ts";
import { createAuditWriter } from "../src/sidecar/storage/audit-writer.ts";
import { PolicyHolder } from "../src/sidecar/core/policy-holder.ts";
import { createStandaloneSource } from "../src/sidecar/cluster/policy-sources.ts";
import { RunSession } from "../src/sidecar/core/run-session.ts";
import { ToolCallService } from "../src/sidecar/core/tool-call-service.ts";
import { createSidecarTracing } from "../src/sidecar/core/call-spans.ts";
import { Ledger } from "../src/sidecar/core/ledger.ts";
import type { CallRecord } from "../src/sidecar/core/call-records.ts";
import { createHash } from "node:crypto";
import type { RunPolicy } from "../src/api/run-policy.ts";
import type { SidecarMetrics } from "../src/metrics/sidecar-metrics.ts";
import { buildEnforcement, type EnforcementContext } from "../src/sidecar/core/enforcement.ts";
import { PolicyRollout } from "../src/sidecar/core/policy-rollout.ts";
import { numberFlag, SuiteRecord } from "./bench-results.ts";
import { measureRate, printTable, summarize, timeEach, type Row } from "./bench-stats.ts";
import { buildEntryTree, buildSidecarTree, type EntryTree, type SidecarTree } from "./bench-tree.ts";
import { REAL_PATH_FS } from "../src/sidecar/real-path-fs.ts";

/** The real filesystem, as the sidecar passes it (realpath(3), and the directory check of an exact root's last canonical form). */
export const REAL_FS: PathFs = REAL_PATH_FS;
/** A filesystem that answers every realpath with the path itself: the decision's matching without syscalls. */
export const LEXICAL_FS: PathFs = { realpath: (p) => p };

const TARGET = "p99 ≤ 50 µs";

/** A read-path context over an entry tree, every entry declared and granted. */
export function entryContext(tree: EntryTree, entries: readonly string[], fs: PathFs): ResolveContext {
  const built = buildReadPathPolicy({ agentName: "bench", declared: entries, granted: entries, allowBlueprintReadPaths: false, workdir: tree.work, home: tree.home });
  if (!built.ok) throw new Error(built.error);
  return { workdir: tree.work, policy: built.value, fs };
}

/** Checks that a request gets the decision the row claims, so a row can never time the wrong path. */
export function expectDecision(request: string, ctx: ResolveContext, code: string): void {
  const r = resolveRead(request, ctx);
  if (r.code !== code) throw new Error(`bench setup: ${request} resolved to ${r.code}, expected ${code}`);
}

/** The decision's input for one call with a private context (so outbound calls need the allowlist or a rule). */
function callInput(allowlist: readonly AllowlistRule[], rules: CompiledRuleSet, tool: string, target: string | undefined) {
  const taint = new ContextTaint([{ region: "conversation", entryId: "r", level: "private" }]);
  return (i: number) => ({
    gate: {
      taintTracking: true, agentId: "bench", callId: `c${i}`, tool, target, context: taint,
      policy: { overrides: new Map(), allowlist, rules },
      mode: "interactive" as const, sessionRaises: new Set<string>(), promptTimeoutSeconds: 3600, clock: Date.now,
    },
    permissions: { userPermissions: { [tool]: "allow" as const } },
  });
}

/** A gate call over an allowlist and rule set (a tool that names no path: permission, then the gate). */
export function gateCall(allowlist: readonly AllowlistRule[], rules: CompiledRuleSet, tool: string, target: string | undefined) {
  const input = callInput(allowlist, rules, tool, target);
  return (i: number) => decideToolCall(input(i));
}

/**
 * An acting call (http_post to an allowlisted host, so the taint gate lets it through) decided with the integrity step
 * on: the context holds the Run's task (trusted) and, with `pageChars` > 0, a web page of that many characters
 * (untrusted), over which every argument's provenance is computed; `body` replaces the call's body (the identity tokens
 * of a reaching call's text are looked up under an untrusted context).
 */
export function integrityCall(pageChars: number, body?: string) {
  const allow: AllowlistRule[] = [{ tool: "http_post", to: ["*.example.com"], channel: [], maxSensitivity: "private" }];
  const input = callInput(allow, EMPTY_RULE_SET, "http_post", undefined);
  const context = new ContextIntegrity({ maxChars: 1_048_576, minValueLength: 4 });
  context.label("task", "t", "trusted", { text: "Post the weekly summary to https://hooks.example.com/weekly as JSON, then tell the team." });
  if (pageChars > 0) context.label("web", "p", "untrusted", { tool: "web_fetch", text: "lorem ipsum dolor sit amet ".repeat(Math.ceil(pageChars / 27)).slice(0, pageChars) });
  const args = { url: "https://hooks.example.com/weekly", body: body ?? JSON.stringify({ summary: "all green this week", items: 12 }) };
  const integrity = {
    context, policy: { enforce: true, onHold: "ask" as const, checkTargets: false, allowlist: [], taintAllowlist: allow, rules: EMPTY_RULE_SET },
  };
  return (i: number) => {
    const base = input(i);
    return decideToolCall({ ...base, gate: { ...base.gate, args }, args, integrity });
  };
}

/** A read_file call's whole decision: permission, its path resolved on `context` (real realpath), then the gate. */
export function readFileCall(context: ResolveContext, path: string) {
  const input = callInput([], EMPTY_RULE_SET, "read_file", undefined);
  const paths = { requests: [path], access: "read" as const, context };
  return (i: number) => decideToolCall({ ...input(i), paths });
}

/** How a decision went: its kind, and the gate's verdict (or the refusal key) when there is one. */
export function describeDecision(d: ToolCallDecision): string {
  if (d.kind === "refuse") return `refuse ${d.reason}`;
  const gate = d.kind === "ask-permission" ? undefined : d.gate;
  return gate?.kind === "run" ? `${d.kind} ${gate.verdict.kind}` : `${d.kind}${gate === undefined ? "" : ` ${gate.kind}`}`;
}

/** Checks that a decision row takes the branch it claims, so a row can never time the wrong path. */
export function expectDecided(name: string, fn: (i: number) => ToolCallDecision, expected: string): void {
  const got = describeDecision(fn(0));
  if (got !== expected) throw new Error(`bench setup: '${name}' decided ${got}, expected ${expected}`);
}

function sidecarTreeRows(tree: SidecarTree, n: number): Row[] {
  const built = buildReadPathPolicy({
    agentName: "bench", declared: ["~/docs", "glob:~/projects/**/*.md", "regex:~/private/.*"], granted: ["~/docs", "glob:~/projects/**/*.md"],
    allowBlueprintReadPaths: false, workdir: tree.work, home: tree.home,
  });
  if (!built.ok) throw new Error(built.error);
  const ctx = { workdir: tree.work, policy: built.value, fs: REAL_FS };
  return [
    { name: "resolveRead inside the workdir (4 levels)", summary: summarize(timeEach(n, () => resolveRead("src/app/lib/core/index.ts", ctx))), target: TARGET },
    { name: "resolveRead granted, exact entry", summary: summarize(timeEach(n, () => resolveRead(join(tree.home, "docs/design/2026/plan.md"), ctx))), target: TARGET },
    { name: "resolveRead granted, glob entry", summary: summarize(timeEach(n, () => resolveRead(join(tree.home, "projects/a/notes/n.md"), ctx))), target: TARGET },
    { name: "resolveRead refused (declared, not granted)", summary: summarize(timeEach(n, () => resolveRead(join(tree.home, "private/key"), ctx))), target: TARGET },
    { name: "realpath(3) alone, 5 levels", summary: summarize(timeEach(n, () => realpathSync.native(join(tree.deep, "index.ts")))), note: "reference" },
  ];
}

function largeTreeRows(tree: EntryTree, n: number): Row[] {
  const rows: Row[] = [];
  const files = tree.files;
  for (const [label, fs] of [["realpath", REAL_FS], ["lexical, no syscalls", LEXICAL_FS]] as const) {
    const ctx = entryContext(tree, tree.entries, fs);
    expectDecision(files[0]!, ctx, "allowed");
    expectDecision(tree.undeclared[0]!, ctx, "not-declared");
    const granted = (i: number) => resolveRead(files[i % files.length]!, ctx);
    const refused = (i: number) => resolveRead(tree.undeclared[i % tree.undeclared.length]!, ctx);
    rows.push({ name: `10,000 files, 50 entries: granted, any file (${label})`, summary: summarize(timeEach(n, granted)), perSecond: measureRate(2000, granted), target: fs === REAL_FS ? TARGET : "", note: "uniform over the files, so over the entries" });
    rows.push({ name: `10,000 files, 50 entries: refused, not declared (${label})`, summary: summarize(timeEach(n, refused)), perSecond: measureRate(2000, refused), target: fs === REAL_FS ? TARGET : "", note: "every entry tried" });
  }
  return rows;
}

function gateRows(tree: SidecarTree, n: number): Row[] {
  const allow: AllowlistRule[] = [{ tool: "http_post", to: ["*.example.com"], channel: [], maxSensitivity: "private" }];
  const rules = compileRules([
    { name: "10-internal-hooks", source: `tool == "http_post" && target.endsWith(".internal.example") && taint_level != "private"` },
    { name: "20-ops-mail", source: `tool == "send_email" && target == "ops@corp.example"` },
  ]);
  const workdir = { workdir: tree.work, policy: null, fs: REAL_FS };
  const cases: [string, (i: number) => ToolCallDecision, string, string][] = [
    ["gate: internal tool (read_file), taint tracking on", gateCall(allow, EMPTY_RULE_SET, "read_file", undefined), "run not-outbound", "not outbound: auto-allow"],
    ["gate: outbound, allowlist match", gateCall(allow, EMPTY_RULE_SET, "http_post", "hooks.example.com"), "run allowlist", "the existing row"],
    ["gate: outbound, decided by a CEL rule (2 rules)", gateCall([], rules, "send_email", "ops@corp.example"), "run rule", "first rule false, second true"],
    ["gate: outbound, blocked, prompt built", gateCall(allow, rules, "http_post", "evil.example.net"), "ask-gate prompt", "allowlist and both rules miss"],
    ["gate + integrity: acting call, trusted context (task only)", integrityCall(0), "run allowlist", "provenance of 2 arguments over the task's text"],
    ["gate + integrity: acting call held, untrusted 4 KiB page", integrityCall(4096), "ask-integrity allowlist", "provenance over the task and the page; prompt built"],
    ["gate + integrity: acting call held, untrusted 256 KiB page", integrityCall(262_144), "ask-integrity allowlist", "a quarter of the default provenance cap (1 MiB)"],
    [
      "gate + integrity: held, 4 KiB body with 32 links and addresses, untrusted 4 KiB page",
      integrityCall(4096, Array.from({ length: 16 }, (_, i) => `see https://hooks.example.com/weekly/${i} or mail ops${i}@corp.example; `).join("").padEnd(4096, "x")),
      "ask-integrity allowlist", "identity tokens of a reaching call's text, each looked up (issue 40)",
    ],
    [
      "read_file in the workdir: permission, read path (realpath), gate", readFileCall(workdir, "src/app/lib/core/index.ts"),
      "run not-outbound", "the whole decision of the whole-call row",
    ],
  ];
  return cases.map(([name, fn, expected, note]) => {
    expectDecided(name, fn, expected);
    return { name, summary: summarize(timeEach(n, fn)), perSecond: measureRate(1000, fn), target: TARGET, note };
  });
}

/** A local OTLP/HTTP receiver that answers every export 200 and counts the requests (the "tracing on" row's collector). */
async function startOtlpSink(): Promise<{ endpoint: string; exports: () => number; close: () => Promise<void> }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      count++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, exports: () => count, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A rollout of the whole-call rows: none, or a warn candidate that agrees with the pinned policy, or that flips every call. */
type RolloutCase = "none" | "agrees" | "flips";

/** A warn candidate over the pinned run policy: the same (`agrees`), or read_file denied by its ceiling (`flips`). */
function benchRollout(pinned: RunPolicy, ctx: EnforcementContext, c: RolloutCase, sinks: { ledger: Ledger; metrics: SidecarMetrics }): PolicyRollout | undefined {
  if (c === "none") return undefined;
  const rollout = new PolicyRollout((rp) => buildEnforcement(rp, ctx), {
    changed() {},
    failed(_, error) {
      throw new Error(`bench setup: the candidate does not compile: ${error}`);
    },
    flipped(flip, candidate, callId) {
      sinks.metrics.policyFlip("warn", flip.now, flip.candidate);
      sinks.ledger.record({ timestamp: 0, agent_id: "bench", call_id: callId, tool_name: flip.tool, stage: "main", decision: "would_flip", decision_source: "policy_candidate", would_flip: { enforcement: "warn", policy_generation: candidate.generation, now: flip.now, candidate: flip.candidate, differs: flip.differs } });
    },
  });
  const candidate: RunPolicy = c === "agrees" ? pinned : { ...pinned, toolPermissions: { ...pinned.toolPermissions, ceiling: { ...pinned.toolPermissions.ceiling, read_file: "deny" } } };
  const text = JSON.stringify(candidate);
  rollout.offer("candidate", { generation: 2, sha256: createHash("sha256").update(text).digest("hex"), text, enforcement: "warn" });
  return rollout;
}

/** What a whole-call row runs beside the call: tracing on or off, and a warn candidate or none. */
interface WholeCallCase {
  readonly tracing: boolean;
  readonly rollout: RolloutCase;
}

const WHOLE_CALL_NAMES: Record<string, [string, string]> = {
  "off/none": ["whole read_file call in process (decide, open, read, label, audit)", "no HTTP; tracing off: no tracer"],
  "on/none": ["whole read_file call, tracing on (a span per call, batch processor, OTLP/HTTP to loopback)", "compare with the row above: p99 ≤ +5 µs"],
  "off/agrees": ["same, a warn candidate deciding it too (same outcome)", "issue 43: the second decision alone"],
  "off/flips": ["same, a warn candidate flipping it (allow -> deny)", "issue 43: second decision, would_flip record, metric"],
};

/**
 * The whole read_file call in process, tracing off (no tracer: the ledger holds no spans, as `leviath sidecar`
 * without `--otlp-traces-endpoint`) or on (every call a span through the batch processor to a local OTLP/HTTP
 * receiver, its arguments and result exported: the public context's and label's content), with or without a warn
 * candidate decided beside the pinned policy.
 */
async function wholeCallRow(tree: SidecarTree, n: number, c: WholeCallCase): Promise<Row> {
  const key = `${c.tracing ? "on" : "off"}/${c.rollout}`;
  const source = createStandaloneSource({ agent: join(tree.root, "agent.leviath"), config: join(tree.root, "config.toml"), mode: "interactive", allow: [] });
  const ctx: EnforcementContext = { workdir: tree.work, home: tree.home };
  const loaded = PolicyHolder.open(source, ctx, { loaded() {}, failed() {} });
  if (!loaded.ok) throw new Error(loaded.error);
  const audit = createAuditWriter(join(tree.root, `audit-${key.replace("/", "-")}`), "bench", () => {});
  const session = new RunSession({ journal: null, entryStage: 0, onJournalError: () => {} });
  const sink = c.tracing ? await startOtlpSink() : undefined;
  const traced = sink === undefined ? undefined : createSidecarTracing({ endpoint: sink.endpoint, content: "public", runName: "bench" });
  const spans = traced?.spans({ taint: () => session.context.level(), agent: () => "bench", mode: () => "interactive", clock: Date.now, monotonicMs: () => performance.now() });
  const metrics = createSidecarMetrics();
  const log = pino({ level: "silent" });
  const policy = () => loaded.holder.current();
  const ledger = new Ledger({ policy, stageIndex: () => session.stageIndex, audit, metrics, log, clock: Date.now, monotonicMs: () => performance.now(), runName: "bench", spans });
  const rollout = benchRollout(policy().runPolicy, ctx, c.rollout, { ledger, metrics });
  const service = new ToolCallService({
    policy, workdir: tree.work, fs: REAL_FS, session, ledger, ...(rollout ? { rollout } : {}),
    approvals: new ApprovalBook(Date.now, () => {}), audit, metrics, log,
    shell: { label: "local", run: async () => ({ exitCode: 0, stdout: "", stderr: "", timedOut: false }) }, clock: Date.now, monotonicMs: () => performance.now(), runName: "bench",
  });
  const call = (id: string) => service.submit({ id, tool: "read_file", args: { path: "src/app/lib/core/index.ts" } });
  const first = await call("check");
  if (first.kind !== "allow" || first.body.isError) throw new Error(`bench setup: the whole read_file call answered ${JSON.stringify(first.body)}, expected an allow`);
  const flips = rollout?.tally()?.count ?? 0;
  if (flips !== (c.rollout === "flips" ? 1 : 0)) throw new Error(`bench setup: ${flips} would-flips after one call under '${c.rollout}'`);
  const samples = new Float64Array(n);
  const started = performance.now();
  for (let i = 0; i < n + 2000; i++) {
    const t0 = process.hrtime.bigint();
    await call(`s${i}`);
    if (i >= 2000) samples[i - 2000] = Number(process.hrtime.bigint() - t0);
  }
  const perSecond = (n + 2000) / ((performance.now() - started) / 1000);
  audit.close();
  await traced?.shutdown();
  if (sink !== undefined) {
    const exports = sink.exports();
    await sink.close();
    // The row must have exported what it claims to: a tracer that made no span would time nothing.
    if (exports === 0) throw new Error("bench setup: tracing on, but no span reached the OTLP receiver");
  }
  const [name, note] = WHOLE_CALL_NAMES[key] ?? [key, ""];
  return { name, summary: summarize(samples), perSecond, note };
}

/**
 * What tracing adds to a decision, alone: what a call's span takes on the decision's path (`CallSpans.decided` at
 * the decision, `settled` at the final answer: an allowed read_file whose arguments and result are exported). The
 * span itself is made after the answer (the next turn of the event loop), then exported by the batch processor to a
 * local OTLP/HTTP receiver; both get the event loop every 500 calls, as between requests, so the garbage they leave is
 * collected inside the timed region as it would be. Timed on its own because the whole-call rows' p99 is the machine's
 * noise (milliseconds on a loaded VM), while this is the few microseconds the target is about.
 */
async function spanCostRow(n: number): Promise<Row> {
  const sink = await startOtlpSink();
  const traced = createSidecarTracing({ endpoint: sink.endpoint, content: "public", runName: "bench" });
  const spans = traced.spans({ taint: () => "public", agent: () => "default/bench", mode: () => "interactive", clock: Date.now, monotonicMs: () => performance.now() });
  const args = { path: "src/app/lib/core/index.ts" };
  const record = (i: number) => ({ id: `c${i}`, tool: "read_file", args, target: undefined, integrity: undefined, started: performance.now() }) as unknown as CallRecord;
  const outcome = { kind: "allow", body: { id: "c", tool: "read_file", decision: "allow", result: "export const x = 1;\n", isError: false, entry: { region: "conversation", id: "c" }, label: "public", taint: "public" } } as const;
  const entry = { decision: "allow", source: "auto_allow" } as const;
  const samples = new Float64Array(n);
  for (let i = 0; i < n + 2000; i++) {
    const rec = record(i);
    const t0 = process.hrtime.bigint();
    spans.decided(rec, entry, "main");
    spans.settled(rec, outcome);
    if (i >= 2000) samples[i - 2000] = Number(process.hrtime.bigint() - t0);
    if (i % 500 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  await traced.shutdown();
  const exports = sink.exports();
  await sink.close();
  if (exports === 0) throw new Error("bench setup: no span reached the OTLP receiver");
  return { name: "tracing on: a call's span on the decision's path (gathered at the decision, queued at the answer)", summary: summarize(samples), target: "p99 ≤ 5 µs", note: "its making and export follow the answer" };
}

/** Runs the suite and writes `bench/results/decision.json`. */
export async function runDecisionSuite(n: number): Promise<void> {
  const record = new SuiteRecord("decision", { iterations: n });
  const small = buildSidecarTree();
  const large = buildEntryTree(50, 10, 20);
  try {
    process.stdout.write(`trees: ${small.root} (sidecar's), ${large.root} (${large.files.length} files, entries ${JSON.stringify(large.kinds)})\n`);
    const readRows = [...sidecarTreeRows(small, n), ...largeTreeRows(large, n)];
    printTable("Read-path decisions (resolveRead)", readRows);
    record.add("Read-path decisions (resolveRead)", readRows);
    const gate = gateRows(small, n);
    printTable("Permission + taint gate (decideToolCall)", gate);
    record.add("Permission + taint gate (decideToolCall)", gate);
    const whole = [
      await wholeCallRow(small, n, { tracing: false, rollout: "none" }), await wholeCallRow(small, n, { tracing: true, rollout: "none" }), await spanCostRow(n),
      await wholeCallRow(small, n, { tracing: false, rollout: "agrees" }), await wholeCallRow(small, n, { tracing: false, rollout: "flips" }),
    ];
    printTable("Whole call in process", whole);
    record.add("Whole call in process", whole);
    record.extra["tree"] = { files: large.files.length, entries: large.entries.length, kinds: large.kinds, sampleEntries: large.entries.slice(0, 3) };
    record.write();
  } finally {
    // The trees go whatever happened: a failed check must not leave 10,000 files behind.
    for (const root of [small.root, large.root]) rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.main) await runDecisionSuite(numberFlag("iterations", 20_000));
