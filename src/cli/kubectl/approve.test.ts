import { describe, expect, it } from "vitest";
import { UsageError } from "../io.ts";
import { decideApprovalOutcome, parseDecision } from "./approve.ts";

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
});
