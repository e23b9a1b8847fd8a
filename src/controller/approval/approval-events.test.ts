import { describe, expect, it } from "vitest";
import type { Condition } from "../../api/status.ts";
import { computeApprovalEvents } from "./approval-events.ts";

const cond = (type: string, status: Condition["status"], reason: string, message: string): Condition => ({ type, status, reason, message, lastTransitionTime: "2026-01-01T00:00:00Z" });

describe("computeApprovalEvents", () => {
  it("reports binding and matching as Normal, an answer that answers nothing as a Warning saying why", () => {
    const next = [cond("Bound", "True", "BoundToRun", "bound to Run 'r' (uid u)"), cond("Matched", "False", "NoPendingPrompt", "Run 'r' has no pending prompt 'x'")];
    expect(computeApprovalEvents(() => undefined, next, "Bind")).toEqual([
      { type: "Normal", reason: "BoundToRun", action: "Bind", note: "Bound: bound to Run 'r' (uid u)" },
      { type: "Warning", reason: "NoPendingPrompt", action: "Bind", note: "Matched: Run 'r' has no pending prompt 'x'" },
    ]);
    const early = computeApprovalEvents(() => undefined, [cond("Bound", "False", "PredatesRun", "created before Run 'r' existed")], "Bind");
    expect(early).toEqual([{ type: "Warning", reason: "PredatesRun", action: "Bind", note: "Bound: created before Run 'r' existed" }]);
  });

  it("says nothing for an unchanged condition; a consumed answer is Normal, one not applied a Warning", () => {
    const bound = cond("Bound", "True", "BoundToRun", "m");
    const before = (type: string) => (type === "Bound" ? bound : { status: "True" as const, reason: "PendingPrompt" });
    expect(computeApprovalEvents(before, [bound, cond("Matched", "True", "PendingPrompt", "m2")], "Bind")).toEqual([]);
    expect(computeApprovalEvents(before, [bound, cond("Matched", "True", "Consumed", "applied: allowOnce")], "Bind")).toEqual([
      { type: "Normal", reason: "Consumed", action: "Bind", note: "Matched: applied: allowOnce" },
    ]);
    expect(computeApprovalEvents(before, [bound, cond("Matched", "False", "NotApplied", "no pending prompt 'p'")], "Bind")[0]).toMatchObject({ type: "Warning", reason: "NotApplied" });
  });
});
