import { describe, expect, it } from "vitest";
import { UsageError } from "../io.ts";
import { decideApprovalOutcome, isStandingAnswer, parseDecision } from "./approve.ts";

const cond = (type: string, status: "True" | "False", reason: string, message = "") => ({ type, status, reason, message, lastTransitionTime: "2026-01-01T00:00:00Z" });

describe("approve", () => {
  it("takes exactly one decision flag", () => {
    expect(parseDecision({ once: true })).toBe("allowOnce");
    expect(parseDecision({ stage: true })).toBe("allowForStage");
    expect(parseDecision({ run: true })).toBe("allowForRun");
    expect(parseDecision({ deny: true })).toBe("deny");
    expect(() => parseDecision({})).toThrow(UsageError);
    expect(() => parseDecision({ once: true, deny: true })).toThrow("(got --once, --deny)");
  });

  it("is settled by the sidecar's consumed message, or by the controller refusing to bind", () => {
    const base = { metadata: { name: "a" } };
    expect(decideApprovalOutcome({ ...base, status: { consumed: true, message: "applied: allowOnce" } })).toEqual({ settled: true, applied: true, text: "applied: allowOnce" });
    expect(decideApprovalOutcome({ ...base, status: { consumed: true, message: "no pending prompt 'x' (already answered or expired)" } }))
      .toMatchObject({ settled: true, applied: false });
    expect(decideApprovalOutcome({ ...base, status: { conditions: [cond("Bound", "False", "RunNotFound", "no run 'r'")] } }))
      .toEqual({ settled: true, applied: false, text: "not bound to the run (RunNotFound): no run 'r'" });
  });

  it("keeps waiting while the Approval is unbound, relayed, or its prompt not (yet) seen", () => {
    const base = { metadata: { name: "a" } };
    expect(decideApprovalOutcome(base)).toMatchObject({ settled: false, text: "not yet bound by the controller" });
    expect(decideApprovalOutcome({ ...base, status: { conditions: [cond("Bound", "True", "BoundToRun"), cond("Matched", "True", "PendingPrompt")] } })).toMatchObject({ settled: false });
    expect(decideApprovalOutcome({ ...base, status: { conditions: [cond("Bound", "True", "BoundToRun"), cond("Matched", "False", "NoPendingPrompt")] } }))
      .toMatchObject({ settled: false, text: expect.stringContaining("no such pending prompt (NoPendingPrompt)") });
  });

  it("counts an Approval of this Run's prompt as its answer unless it was refused or is bound to an earlier Run", () => {
    const run = { name: "r", uid: "u2" };
    const approval = (extra: { labels?: Record<string, string>; status?: object; approvalId?: string; runName?: string }) => ({
      metadata: { name: "r-x", ...(extra.labels ? { labels: extra.labels } : {}) },
      spec: { runRef: { name: extra.runName ?? "r" }, approvalId: extra.approvalId ?? "gate-1", decision: "allowOnce" as const },
      ...(extra.status ? { status: extra.status } : {}),
    });
    expect(isStandingAnswer(approval({}), run, "gate-1")).toBe(true);
    expect(isStandingAnswer(approval({ labels: { "leviath.dev/run-uid": "u2" }, status: { consumed: true, message: "applied: allowOnce" } }), run, "gate-1")).toBe(true);
    expect(isStandingAnswer(approval({ approvalId: "gate-2" }), run, "gate-1")).toBe(false);
    expect(isStandingAnswer(approval({ runName: "other" }), run, "gate-1")).toBe(false);
    expect(isStandingAnswer(approval({ labels: { "leviath.dev/run-uid": "u1" } }), run, "gate-1")).toBe(false);
    expect(isStandingAnswer(approval({ status: { consumed: true, message: "no pending prompt 'gate-1' (already answered or expired)" } }), run, "gate-1")).toBe(false);
    expect(isStandingAnswer(approval({ status: { conditions: [cond("Bound", "False", "RunNotFound")] } }), run, "gate-1")).toBe(false);
  });
});
