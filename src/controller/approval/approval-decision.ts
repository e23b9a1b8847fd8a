// What the controller does with one Approval (pure): bind it to the uid of the Run it names, or say why it cannot
// answer anything; say whether it matches a pending prompt; and when to delete it. An Approval made before its Run
// existed, or bound to an earlier Run of the same name, never answers the new Run's prompts.
import { APPLIED_MESSAGE_PREFIX, APPROVAL_CONDITION, APPROVAL_REASON, ApprovalSpecSchema, type ApprovalStatus } from "../../api/approval.ts";
import { API_VERSION, APPROVAL_ANNOTATION, KIND, LABEL } from "../../api/constants.ts";
import { buildLabelValue } from "../../sandbox/names.ts";
import type { OwnerReference } from "../../sandbox/kube-types.ts";
import { formatFieldPath, type ConditionDecision } from "../conditions.ts";

/** How long a consumed, orphaned, stale or invalid Approval is kept before the controller deletes it. */
export const DEFAULT_APPROVAL_TTL_MS = 60 * 60_000;

/** The Approval as the decision needs it. */
export interface ApprovalInput {
  spec: unknown;
  status?: ApprovalStatus | undefined;
  createdMs: number;
  labels: Readonly<Record<string, string>>;
}

/** The Run the Approval names, if it exists. */
export interface ApprovalRunInput {
  name: string;
  uid: string;
  createdMs: number;
  pendingIds: readonly string[];
  /** The name of the Run's sidecar ServiceAccount, the only one that may mark the Approval consumed. */
  sidecarServiceAccount: string;
}

/** The metadata that binds an Approval to its Run. */
export interface ApprovalBinding {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  ownerReference: OwnerReference;
}

/** What to do with one Approval. */
export interface ApprovalDecision {
  /** Metadata to apply when the Approval is not bound yet. */
  bind?: ApprovalBinding;
  conditions: ConditionDecision[];
  /** When (epoch ms) to delete it; none while it may still answer a prompt. */
  deleteAtMs?: number;
}

const bound = (status: ConditionDecision["status"], reason: string, message: string): ConditionDecision => ({ type: APPROVAL_CONDITION.bound, status, reason, message });
const matched = (status: ConditionDecision["status"], reason: string, message: string): ConditionDecision => ({ type: APPROVAL_CONDITION.matched, status, reason, message });

/** Matched of a consumed Approval: the sidecar consumes an answer whose prompt is gone too, which answered nothing. */
function consumedCondition(message: string | undefined): ConditionDecision {
  if (message === undefined) return matched("True", APPROVAL_REASON.consumed, "consumed by the Run's sidecar");
  return message.startsWith(APPLIED_MESSAGE_PREFIX) ? matched("True", APPROVAL_REASON.consumed, message) : matched("False", APPROVAL_REASON.notApplied, message);
}

/** The binding of an Approval to one Run: its uid in a label, an owner reference (garbage-collected with the Run), its sidecar named. */
export function buildApprovalBinding(run: ApprovalRunInput): ApprovalBinding {
  return {
    labels: { [LABEL.run]: buildLabelValue(run.name), [LABEL.runUid]: run.uid },
    annotations: { [APPROVAL_ANNOTATION.sidecarServiceAccount]: run.sidecarServiceAccount },
    ownerReference: { apiVersion: API_VERSION, kind: KIND.run, name: run.name, uid: run.uid, controller: false, blockOwnerDeletion: false },
  };
}

/** Decide one Approval against the Run it names (undefined: no such Run). */
export function decideApproval(approval: ApprovalInput, run: ApprovalRunInput | undefined, nowMs: number, ttlMs: number): ApprovalDecision {
  const expire = approval.createdMs + ttlMs;
  const spec = ApprovalSpecSchema.safeParse(approval.spec);
  if (!spec.success) {
    const issue = spec.error.issues[0];
    const message = `${issue ? formatFieldPath("spec", issue.path) : "spec"}: ${issue?.message ?? "invalid"}`;
    return { conditions: [bound("False", APPROVAL_REASON.invalid, message)], deleteAtMs: expire };
  }
  const { runRef, approvalId } = spec.data;
  if (!run) return { conditions: [bound("False", APPROVAL_REASON.runNotFound, `Run '${runRef.name}' does not exist; this Approval answers nothing`)], deleteAtMs: expire };
  const boundUid = approval.labels[LABEL.runUid];
  const stale = decideStale(approval, run, runRef.name);
  if (stale !== undefined) return { conditions: [stale], deleteAtMs: expire };
  const conditions = [bound("True", APPROVAL_REASON.bound, `bound to Run '${runRef.name}' (uid ${run.uid})`)];
  const out: ApprovalDecision = { conditions, ...(boundUid === undefined ? { bind: buildApprovalBinding(run) } : {}) };
  if (approval.status?.consumed) {
    conditions.push(consumedCondition(approval.status.message));
    const consumedMs = Date.parse(approval.status.consumedAt ?? "");
    return { ...out, deleteAtMs: (Number.isFinite(consumedMs) ? consumedMs : approval.createdMs) + ttlMs };
  }
  if (run.pendingIds.includes(approvalId)) conditions.push(matched("True", APPROVAL_REASON.pending, `Run '${runRef.name}' is waiting on prompt '${approvalId}'`));
  else conditions.push(matched("False", APPROVAL_REASON.noPendingPrompt, `Run '${runRef.name}' has no pending prompt '${approvalId}' (answered, expired or never asked)`));
  return out;
}

/** The Bound=False condition of an Approval that belongs to an earlier Run of the same name; `undefined` when it does not. */
function decideStale(approval: ApprovalInput, run: ApprovalRunInput, runName: string): ConditionDecision | undefined {
  const boundUid = approval.labels[LABEL.runUid];
  if (boundUid !== undefined && boundUid !== run.uid) {
    return bound("False", APPROVAL_REASON.stale, `bound to an earlier Run '${runName}' (uid ${boundUid}); it never answers the prompts of Run uid ${run.uid}`);
  }
  if (boundUid === undefined && approval.createdMs < run.createdMs) {
    return bound("False", APPROVAL_REASON.stale, `created before Run '${runName}' (uid ${run.uid}) existed; it never answers that Run's prompts`);
  }
  return undefined;
}
