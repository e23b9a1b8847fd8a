import { describe, expect, it } from "vitest";
import { LABEL } from "../../api/constants.ts";
import { decideApproval, type ApprovalRunInput } from "./approval-decision.ts";

const TTL = 1000;
const spec = { runRef: { name: "r" }, approvalId: "p", decision: "allowOnce" };
const run: ApprovalRunInput = { name: "r", uid: "u2", createdMs: 10_000, pendingIds: ["p"], sidecarServiceAccount: "r-sidecar" };

describe("decideApproval", () => {
  it("binds a new Approval to its Run's uid and matches the pending prompt", () => {
    const d = decideApproval({ spec, createdMs: 20_000, labels: {} }, run, 20_000, TTL);
    expect(d.bind?.labels[LABEL.runUid]).toBe("u2");
    expect(d.bind?.ownerReference).toMatchObject({ kind: "Run", name: "r", uid: "u2", controller: false });
    expect(d.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([["Bound", "True", "BoundToRun"], ["Matched", "True", "PendingPrompt"]]);
    expect(d.deleteAtMs).toBeUndefined();
  });

  it("never binds an Approval made before the Run, nor one bound to an earlier Run of the same name", () => {
    const early = decideApproval({ spec, createdMs: 9_000, labels: {} }, run, 20_000, TTL);
    expect(early.bind).toBeUndefined();
    expect(early.conditions[0]).toMatchObject({ status: "False", reason: "PredatesRun" });
    expect(early.deleteAtMs).toBe(10_000);
    const rebound = decideApproval({ spec, createdMs: 20_000, labels: { [LABEL.runUid]: "u1" } }, run, 20_000, TTL);
    expect(rebound.bind).toBeUndefined();
    expect(rebound.conditions[0]?.message).toBe("bound to an earlier Run 'r' (uid u1); it never answers the prompts of Run uid u2");
  });

  it("reports an orphan, an invalid spec and an unmatched prompt; deletes consumed ones a TTL after consumedAt", () => {
    expect(decideApproval({ spec, createdMs: 0, labels: {} }, undefined, 5, TTL)).toMatchObject({ deleteAtMs: 1000, conditions: [{ reason: "RunNotFound" }] });
    expect(decideApproval({ spec: { ...spec, reasn: "x" }, createdMs: 0, labels: {} }, run, 5, TTL).conditions[0]?.message).toBe('spec: Unrecognized key: "reasn"');
    const unmatched = decideApproval({ spec, createdMs: 20_000, labels: { [LABEL.runUid]: "u2" } }, { ...run, pendingIds: [] }, 20_000, TTL);
    expect(unmatched.conditions[1]).toMatchObject({ status: "False", reason: "NoPendingPrompt" });
    expect(unmatched.deleteAtMs).toBeUndefined();
    const consumed = decideApproval({ spec, status: { consumed: true, consumedAt: "1970-01-01T00:00:30Z", message: "applied: allowOnce" }, createdMs: 20_000, labels: { [LABEL.runUid]: "u2" } }, run, 20_000, TTL);
    expect(consumed).toMatchObject({ deleteAtMs: 31_000, conditions: [{ reason: "BoundToRun" }, { reason: "Consumed", message: "applied: allowOnce" }] });
    const gone = decideApproval({ spec, status: { consumed: true, message: "no pending prompt 'p' (already answered or expired)" }, createdMs: 20_000, labels: { [LABEL.runUid]: "u2" } }, run, 20_000, TTL);
    expect(gone.conditions[1]).toMatchObject({ status: "False", reason: "NotApplied", message: "no pending prompt 'p' (already answered or expired)" });
  });
});
