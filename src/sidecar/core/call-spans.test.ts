import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { createStandaloneSource } from "../cluster/policy-sources.ts";
import { createSidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import { ApprovalBook } from "./approvals.ts";
import type { TraceContentLevel } from "./call-span-state.ts";
import { CallSpans, describeGateRule } from "./call-spans.ts";
import { Ledger } from "./ledger.ts";
import { PolicyHolder } from "./policy-holder.ts";
import { RunSession } from "./run-session.ts";
import { ToolCallService } from "./tool-call-service.ts";

// Each call the service settles is one `execute_tool` span carrying its decision; its arguments and result only up
// to the content level; a prompt's call is one span whose events are its decisions; a traceparent is continued.
const PARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = { traceparent: `00-${PARENT_TRACE}-00f067aa0ba902b7-01` };

function setup(content: TraceContentLevel) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "leviath-spans-")));
  const workdir = join(dir, "work");
  mkdirSync(workdir);
  writeFileSync(join(workdir, "a.txt"), "alpha");
  writeFileSync(join(dir, "agent.leviath"), "[agent]\nname = 'app'\n");
  const source = createStandaloneSource({ agent: join(dir, "agent.leviath"), mode: "interactive", allow: [] });
  const opened = PolicyHolder.open(source, { workdir, home: undefined }, { loaded() {}, failed() {} });
  if (!opened.ok) throw new Error(opened.error);
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const session = new RunSession({ journal: null, entryStage: 0, onJournalError: () => {} });
  const holder = opened.holder;
  const clock = Date.now;
  const monotonicMs = () => performance.now();
  const spans = new CallSpans({
    tracer: provider.getTracer("test"), content, taint: () => session.context.level(), runName: "run-1", namespace: "team",
    agent: () => holder.current().runPolicy.agent.key, mode: () => holder.current().mode, clock, monotonicMs,
  });
  const metrics = createSidecarMetrics();
  const audit = { gate: () => true, decision: () => true, flush() {}, close() {} };
  const log = pino({ level: "silent" });
  const ledger = new Ledger({ policy: () => holder.current(), stageIndex: () => session.stageIndex, audit, metrics, log, clock, monotonicMs, runName: "run-1", spans });
  const service = new ToolCallService({
    policy: () => holder.current(), workdir, fs: { realpath: (p) => realpathSync.native(p) }, session, approvals: new ApprovalBook(Date.now, () => {}),
    audit, metrics, log, clock, monotonicMs, runName: "run-1", ledger,
    shell: { label: "local", run: async () => ({ exitCode: 0, stdout: "", stderr: "", timedOut: false }) },
  });
  // A span is made on the turn of the event loop after its call's answer.
  const finished = async () => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    return exporter.getFinishedSpans();
  };
  return { service, session, finished };
}

describe("CallSpans", () => {
  it("makes one execute_tool span for an allowed read, its arguments and public result included, under the caller's trace", async () => {
    const s = setup("public");
    expect(await s.service.submit({ id: "r1", tool: "read_file", args: { path: "a.txt" }, trace: PARENT })).toMatchObject({ kind: "allow" });
    const [span, ...more] = await s.finished();
    expect(more).toEqual([]);
    expect(span!.name).toBe("execute_tool read_file");
    expect(span!.spanContext().traceId).toBe(PARENT_TRACE);
    expect(span!.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "r1",
      "leviath.decision": "allow", "leviath.decision.source": "taint_disabled", "leviath.run": "run-1", "leviath.namespace": "team", "leviath.agent": "default/app",
      "leviath.stage": "main", "leviath.mode": "interactive", "leviath.taint.before": "public", "leviath.taint.after": "public", "leviath.result.label": "public",
      "gen_ai.tool.call.arguments": JSON.stringify({ path: "a.txt" }), "gen_ai.tool.call.result": expect.stringContaining("alpha"),
    });
  });

  it("exports no content under 'none', nor arguments once the context is above the level", async () => {
    const none = setup("none");
    await none.service.submit({ id: "r1", tool: "read_file", args: { path: "a.txt" } });
    expect(Object.keys((await none.finished())[0]!.attributes).filter((k) => k.startsWith("gen_ai.tool.call.") && k !== "gen_ai.tool.call.id")).toEqual([]);
    const pub = setup("public");
    pub.session.label("conversation", "secret", "private");
    await pub.service.submit({ id: "r2", tool: "read_file", args: { path: "a.txt" } });
    const attrs = (await pub.finished())[0]!.attributes;
    expect(attrs["leviath.taint.before"]).toBe("private");
    expect(attrs["gen_ai.tool.call.arguments"]).toBeUndefined();
    // The result's own label is public here: it is exported.
    expect(attrs["gen_ai.tool.call.result"]).toContain("alpha");
  });

  it("makes a call that was asked one span, its decisions as events, and a refusal an error", async () => {
    const s = setup("public");
    expect(await s.service.submit({ id: "w1", tool: "write_file", args: { path: "b.txt", content: "b" } })).toMatchObject({ kind: "ask" });
    expect(await s.finished()).toEqual([]);
    expect(s.service.answer("tool-w1", "deny")).toBe(true);
    await new Promise<void>((resolve) => setImmediate(resolve));
    const [span] = await s.finished();
    expect(span!.attributes).toMatchObject({ "leviath.decision": "deny", "leviath.decision.code": "approval-declined", "error.type": "approval-declined", "leviath.decision.asked": true });
    expect(span!.events.map((e) => [e.attributes?.["leviath.decision"], e.attributes?.["leviath.decision.source"]])).toEqual([["ask", "permission_ask"], ["deny", "user_declined"]]);
    expect(span!.status.code).toBe(2);
  });

  it("names the rule of a gate event", () => {
    expect(describeGateRule({ AllowlistRule: { rule_index: 2 } })).toBe("allowlist[2]");
    expect(describeGateRule({ ScriptedRule: { script_name: "10-hooks" } })).toBe("10-hooks");
    expect(describeGateRule("AutoAllow")).toBeUndefined();
  });
});
