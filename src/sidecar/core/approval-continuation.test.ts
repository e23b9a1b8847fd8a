import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RunPolicySchema } from "../../api/run-policy.ts";
import { createSidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import type { AuditEvent } from "../../policy/gate-audit.ts";
import type { AuditSink, DecisionRecord } from "../storage/audit-writer.ts";
import { ApprovalContinuation, type CallPrompt } from "./approval-continuation.ts";
import { ApprovalBook } from "./approvals.ts";
import type { CallRecord } from "./call-records.ts";
import { buildEnforcement } from "./enforcement.ts";
import { Ledger } from "./ledger.ts";
import { RunSession } from "./run-session.ts";

// A call waiting on a prompt: what each settlement does to it (a grant, a raise, a refusal, a withdrawal), what is
// recorded, and that it resumes exactly when it was let through.
const sandbox = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };
const built = buildEnforcement(RunPolicySchema.parse({
  agent: { key: "ns/app", name: "app" }, stages: [{ name: "one", sandbox }], entryStage: "one",
  launch: { mode: "interactive", allow: [] }, toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false }, taint: { tracking: true, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 0, shellTimeoutSeconds: 60 },
}), { workdir: "/work", home: undefined });
if (!built.ok) throw new Error(built.error);
const enforcement = built.value;

const TOOL_PROMPT: CallPrompt = { kind: "tool_approval", id: "tool-c1", text: "Allow shell command: ls", options: ["Allow once", "Allow for this stage", "Allow for this run", "Deny"], timeoutSeconds: undefined };
const GATE_PROMPT: CallPrompt = {
  kind: "taint_gate", id: "gate-c1", text: "Tool 'shell' would send Private-level data", options: ["Allow once", "Allow for this session", "Deny"], timeoutSeconds: undefined,
  pending: { agentId: "app", tool: "shell", taint: "private", clearance: "public" },
};

function setup(opts: { grantWrites?: boolean } = {}) {
  const decisions: DecisionRecord[] = [];
  const gates: AuditEvent[] = [];
  const audit: AuditSink = {
    decision: (_i, r) => (decisions.push(r), r.grant_scope === undefined || opts.grantWrites !== false),
    gate: (_i, e) => (gates.push(...e), true),
    flush() {},
    close() {},
  };
  const metrics = createSidecarMetrics();
  const session = new RunSession({ journal: null, entryStage: 0, onJournalError: () => {} });
  const approvals = new ApprovalBook(() => 0, () => {});
  const policy = () => enforcement;
  const ledger = new Ledger({ policy, stageIndex: () => 0, audit, metrics, log: pino({ level: "silent" }), clock: () => 0, monotonicMs: () => 0, runName: "app" });
  const resumed: string[] = [];
  const continuation = new ApprovalContinuation({
    approvals, ledger, session, metrics, policy, clock: Date.now, monotonicMs: () => 0,
    resume: async (rec) => (resumed.push(rec.id), ledger.settle(rec, { kind: "run", body: { id: rec.id, tool: rec.tool, decision: "run" } })),
  });
  const rec: CallRecord = {
    id: "c1", seq: ledger.calls.nextSeq(), tool: "shell", fingerprint: "f", size: 1, args: { command: "ls" }, target: undefined, entry: { region: "conversation", id: "c1" },
    permissionApproved: false, permissionDone: false, gateDone: false, gateSource: "taint_disabled", started: 0, response: undefined, first: undefined,
    done: false, waiters: undefined, chars: 0, deadline: undefined, callerRuns: true,
  };
  ledger.calls.add(rec);
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  const records = () => decisions.map((r) => [r.decision, r.decision_source, r.code ?? r.grant_scope]);
  return { continuation, approvals, session, ledger, rec, resumed, gates, records, settle };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("ApprovalContinuation", () => {
  it("records the ask, raises the prompt and answers ask; an allow-once answer lets the call resume, approved", async () => {
    const s = setup();
    expect(s.continuation.ask(s.rec, TOOL_PROMPT)).toMatchObject({ kind: "ask", body: { decision: "ask", approval: { id: "tool-c1", kind: "tool_approval", callId: "c1", stage: "one" } } });
    expect(s.approvals.list().map((a) => a.id)).toEqual(["tool-c1"]);
    expect(s.approvals.answer("tool-c1", "allowOnce", "looks fine", "alice")).toBe(true);
    await s.settle();
    expect(s.resumed).toEqual(["c1"]);
    expect(s.rec).toMatchObject({ permissionApproved: true, answeredBy: { approvedBy: "alice", reason: "looks fine" } });
    expect(s.session.hasGrant("shell\u0000ls")).toBe(false);
    expect(s.records()).toEqual([["ask", "permission_ask", undefined]]);
  });

  it("an allow-for-the-run answer is on record before it is granted; unrecorded, the call is refused and never resumes", async () => {
    const s = setup();
    s.continuation.ask(s.rec, TOOL_PROMPT);
    s.approvals.answer("tool-c1", "allowForRun");
    await s.settle();
    expect(s.session.hasGrant("shell\u0000ls")).toBe(true);
    expect(s.records()).toEqual([["ask", "permission_ask", undefined], ["allow", "user_approved", "run"]]);
    const failing = setup({ grantWrites: false });
    failing.continuation.ask(failing.rec, TOOL_PROMPT);
    failing.approvals.answer("tool-c1", "allowForRun");
    await failing.settle();
    expect(failing.resumed).toEqual([]);
    expect(failing.session.hasGrant("shell\u0000ls")).toBe(false);
    expect(failing.rec.response).toMatchObject({ kind: "deny", body: { code: "audit-failed" } });
  });

  it("a declined tool approval refuses the call as a decision", async () => {
    const s = setup();
    s.continuation.ask(s.rec, TOOL_PROMPT);
    s.approvals.answer("tool-c1", "deny");
    await s.settle();
    expect(s.resumed).toEqual([]);
    expect(s.rec.response).toMatchObject({ kind: "deny", source: "user_declined", body: { code: "approval-declined", message: "[denied] User declined tool call 'shell'." } });
    expect(s.records()).toEqual([["ask", "permission_ask", undefined], ["deny", "user_declined", "approval-declined"]]);
  });

  it("a prompt nobody answered within the interaction timeout refuses the call with upstream's text, recorded as timed out", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const tool = setup();
    tool.continuation.ask(tool.rec, { ...TOOL_PROMPT, timeoutSeconds: 5 });
    const gate = setup();
    gate.continuation.ask(gate.rec, { ...GATE_PROMPT, timeoutSeconds: 5 });
    vi.advanceTimersByTime(5000);
    await tool.settle();
    expect(tool.resumed).toEqual([]);
    expect(tool.rec.response).toMatchObject({ kind: "deny", source: "approval_timed_out", body: { code: "approval-timed-out", message: "[denied] User declined tool call 'shell'." } });
    expect(tool.records()).toEqual([["ask", "permission_ask", undefined], ["deny", "approval_timed_out", "approval-timed-out"]]);
    expect(gate.gates.map((e) => e.decision_source)).toEqual(["UserDenied"]);
    expect(gate.rec.response).toMatchObject({ kind: "deny", source: "gate_timed_out", body: { code: "gate-timed-out", message: expect.stringContaining("Denied by user.") as unknown } });
  });

  it("a gate prompt answered for the session raises the tool's clearance, records the answer and resumes past the gate", async () => {
    const s = setup();
    s.continuation.ask(s.rec, GATE_PROMPT);
    s.approvals.answer("gate-c1", "allowForRun");
    await s.settle();
    expect(s.resumed).toEqual(["c1"]);
    expect([...s.session.raises]).toEqual(["shell"]);
    expect(s.rec).toMatchObject({ gateDone: true, gateSource: "user_always_allow" });
    expect(s.gates.map((e) => e.decision_source)).toEqual(["UserAlwaysAllow"]);
  });

  it("a gate prompt denied refuses the call with the gate's record and text", async () => {
    const s = setup();
    s.continuation.ask(s.rec, GATE_PROMPT);
    s.approvals.answer("gate-c1", "deny");
    await s.settle();
    expect(s.resumed).toEqual([]);
    expect(s.gates.map((e) => e.decision_source)).toEqual(["UserDenied"]);
    expect(s.rec.response).toMatchObject({ kind: "deny", source: "user_denied", body: { code: "gate-denied" } });
  });

  it("withdraws a waiting call: its prompt is closed and it is refused client-gave-up; a stopping sidecar refuses without a decision", async () => {
    const s = setup();
    s.continuation.ask(s.rec, TOOL_PROMPT);
    expect(s.continuation.withdraw(s.rec, "cancelled")).toBe(true);
    expect(s.continuation.withdraw(s.rec, "cancelled")).toBe(false);
    await s.settle();
    expect(s.approvals.isWithdrawn("tool-c1")).toBe(true);
    expect(s.rec.response).toMatchObject({ kind: "deny", source: "client_gave_up", body: { code: "client-gave-up" } });
    expect(s.records().at(-1)).toEqual(["deny", "client_gave_up", "client-gave-up"]);
    const stopping = setup();
    stopping.continuation.ask(stopping.rec, TOOL_PROMPT);
    stopping.approvals.cancelAll();
    await stopping.settle();
    expect(stopping.rec.response).toMatchObject({ kind: "deny", body: { code: "sidecar-stopping" } });
    expect(stopping.rec.response).not.toHaveProperty("source");
    expect(stopping.records()).toEqual([["ask", "permission_ask", undefined]]);
  });

  it("withdraws a call its client did not wait for again before its deadline", async () => {
    const s = setup();
    s.continuation.ask(s.rec, TOOL_PROMPT);
    s.continuation.renewDeadline(s.rec, Date.now() + 20);
    expect(await s.ledger.calls.wait("c1", 5000)).toMatchObject({ kind: "deny", body: { code: "client-gave-up" } });
    expect(s.rec.gaveUp).toEqual({ reason: "deadline", approvalId: "tool-c1" });
  });
});
