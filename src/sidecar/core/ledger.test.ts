import pino from "pino";
import { describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../api/run-policy.ts";
import { createSidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import type { AuditEvent } from "../../policy/gate-audit.ts";
import type { AuditSink, DecisionRecord } from "../storage/audit-writer.ts";
import type { CallRecord } from "./call-records.ts";
import { buildEnforcement } from "./enforcement.ts";
import { Ledger } from "./ledger.ts";

// The ledger is where a decision becomes a record: the audit line (fields in the order readers expect), the count
// and the metric, and the call's answer. A record that cannot be written is reported and counted.
const sandbox = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };
const policy = RunPolicySchema.parse({
  agent: { key: "ns/app", name: "app" },
  stages: [{ name: "one", sandbox }, { name: "two", sandbox }],
  entryStage: "one",
  launch: { mode: "interactive", allow: [] },
  toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
  taint: { tracking: true, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 0, shellTimeoutSeconds: 60 },
});
const built = buildEnforcement(policy, { workdir: "/work", home: undefined });
if (!built.ok) throw new Error(built.error);
const enforcement = built.value;

function setup(writes = true) {
  const decisions: [number, DecisionRecord][] = [];
  const gates: [number, readonly AuditEvent[]][] = [];
  const audit: AuditSink = {
    decision: (i, r) => (decisions.push([i, r]), writes),
    gate: (i, e) => (gates.push([i, e]), writes),
    flush() {},
    close() {},
  };
  const metrics = createSidecarMetrics();
  let now = 1000;
  const ledger = new Ledger({ policy: () => enforcement, stageIndex: () => 1, audit, metrics, log: pino({ level: "silent" }), clock: () => 1_700_000_000_500, monotonicMs: () => now, runName: "app" });
  const call = (id: string, tool: string, args: Record<string, unknown> = {}): CallRecord => {
    const rec: CallRecord = {
      id, seq: ledger.calls.nextSeq(), tool, fingerprint: id, size: 10, args, target: undefined, entry: { region: "conversation", id },
      permissionApproved: false, permissionDone: false, gateDone: false, gateSource: "taint_disabled", started: 400, response: undefined, first: undefined,
      done: false, waiters: undefined, chars: 0, deadline: undefined, callerRuns: true,
    };
    ledger.calls.add(rec);
    return rec;
  };
  const metric = async (name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values;
  return { ledger, decisions, gates, call, metric, advance: (ms: number) => (now += ms) };
}

describe("Ledger", () => {
  it("records an allow: one audit line in the current stage, fields in order, counted, timed from the call's start", async () => {
    const s = setup();
    const rec = s.call("c1", "read_file", { path: "a.txt" });
    rec.answeredBy = { approvedBy: "alice", reason: "ok" };
    expect(s.ledger.decided(rec, { decision: "allow", source: "user_approved", at: 700 })).toBe(true);
    expect(s.decisions).toHaveLength(1);
    const [stage, record] = s.decisions[0]!;
    expect(stage).toBe(1);
    expect(JSON.stringify(record)).toBe(JSON.stringify({
      timestamp: 1_700_000_000, agent_id: "app", call_id: "c1", tool_name: "read_file", stage: "two", decision: "allow", decision_source: "user_approved",
      paths: ["a.txt"], approved_by: "alice", approval_reason: "ok",
    }));
    expect(s.ledger.counts.get("user_approved")).toBe(1);
    const durations = await s.metric("leviath_sidecar_decision_duration_seconds");
    expect(durations.find((v) => (v as { metricName?: string }).metricName?.endsWith("_sum"))?.value).toBeCloseTo(0.3);
  });

  it("refuses with the row's source and code, and sets the call's answer", async () => {
    const s = setup();
    const rec = s.call("c2", "shell", { command: "rm -rf /" });
    s.advance(500);
    const out = s.ledger.refuse(rec, "permission-denied", "[denied] Tool 'shell' is not permitted.");
    expect(out).toMatchObject({ kind: "deny", source: "permission_deny", body: { id: "c2", decision: "deny", code: "permission-denied", message: "[denied] Tool 'shell' is not permitted." } });
    expect(s.ledger.calls.get("c2")).toMatchObject({ done: true, response: out });
    expect(s.decisions.map(([, r]) => [r.decision, r.decision_source, r.code])).toEqual([["deny", "permission_deny", "permission-denied"]]);
    expect(s.ledger.counts.get("permission_deny")).toBe(1);
  });

  it("writes a run grant's record with its key digest, never the command", () => {
    const s = setup();
    const rec = s.call("c3", "shell");
    rec.answeredBy = { approvedBy: "bob" };
    expect(s.ledger.runGrant(rec, "shell\u0000ls -la")).toBe(true);
    const record = s.decisions[0]![1];
    expect(Object.keys(record)).toEqual(["timestamp", "agent_id", "call_id", "tool_name", "stage", "decision", "decision_source", "grant_scope", "grant_key_sha256", "approved_by"]);
    expect(JSON.stringify(record)).not.toContain("ls -la");
  });

  it("writes gate events only when there are some", () => {
    const s = setup();
    expect(s.ledger.gate([])).toBe(true);
    expect(s.gates).toEqual([]);
    const event: AuditEvent = { timestamp: 1, agent_id: "app", tool_name: "shell", taint_level: "Private", clearance: "Public", allowed: false, decision_source: "AutoBlock" };
    expect(s.ledger.gate([event])).toBe(true);
    expect(s.gates).toEqual([[1, [event]]]);
  });

  it("reports and counts every record it could not write", async () => {
    const s = setup(false);
    const rec = s.call("c4", "read_file", { path: "a.txt" });
    expect(s.ledger.decided(rec, { decision: "allow", source: "auto_allow" })).toBe(false);
    expect(s.ledger.gate([{ timestamp: 1, agent_id: "app", tool_name: "x", taint_level: "Public", clearance: "Public", allowed: true, decision_source: "AutoAllow" }])).toBe(false);
    expect(s.ledger.record({ timestamp: 1, agent_id: "app", call_id: "seed-1", tool_name: "seed", stage: "two", decision: "allow", decision_source: "workdir" })).toBe(false);
    expect((await s.metric("leviath_sidecar_audit_write_errors_total"))[0]?.value).toBe(3);
  });
});
