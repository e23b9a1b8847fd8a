// The Events of an Approval: it was bound to its Run or answers nothing (and why), its prompt is pending or not
// (a wrong id), and what the Run's sidecar made of it (applied, or consumed without answering anything). One
// Event per change of a condition's status or reason, so `kubectl describe approval` and `kubectl get events`
// tell an answer's story without reading its status. Pure: the reconciler records what this returns.
import { APPROVAL_CONDITION, APPROVAL_REASON } from "../../api/approval.ts";
import type { Condition } from "../../api/status.ts";
import type { EventNote } from "../../kube/event-recorder.ts";

/** The `action` of an Approval's Events. */
export const APPROVAL_ACTION = "Bind";

/** Reasons of normal progress; every other reason of Bound or Matched is a Warning (the answer answers nothing). */
const NORMAL_REASONS: ReadonlySet<string> = new Set([APPROVAL_REASON.bound, APPROVAL_REASON.pending, APPROVAL_REASON.consumed]);

const TYPES: ReadonlySet<string> = new Set(Object.values(APPROVAL_CONDITION));

/** The Events an Approval's condition change is worth, in condition order. */
export function computeApprovalEvents(previous: (type: string) => Pick<Condition, "status" | "reason"> | undefined, next: readonly Condition[], action: string): EventNote[] {
  return next.flatMap((c): EventNote[] => {
    if (!TYPES.has(c.type)) return [];
    const before = previous(c.type);
    if (before !== undefined && before.status === c.status && before.reason === c.reason) return [];
    return [{ type: NORMAL_REASONS.has(c.reason) ? "Normal" : "Warning", reason: c.reason, action, note: `${c.type}: ${c.message}` }];
  });
}
