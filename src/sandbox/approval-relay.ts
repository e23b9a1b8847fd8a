// The per-Run approval relay: a ConfigMap the Approval controller (trusted) writes with the validated answers of
// the Approvals bound to one Run, and that Run's sidecar reads by name. RBAC cannot narrow list/watch of Approvals
// by label, so without it the sidecar would read every Approval of its namespace.
import { APPROVAL_RELAY_KEY, ApprovalSpecSchema, MAX_RELAYED_ANSWERS, type ApprovalRelayEntry } from "../api/approval.ts";
import { API_VERSION, KIND, LABEL } from "../api/constants.ts";
import type { KubeObject } from "./kube-types.ts";
import { buildChildNames, buildRunLabels, COMPONENT, type RunRef } from "./names.ts";

/** An Approval as the relay reads it. */
export interface RelayedApproval {
  metadata: { name: string; uid?: string | undefined; creationTimestamp?: unknown; deletionTimestamp?: unknown; labels?: Record<string, string> | undefined };
  spec?: unknown;
  status?: { consumed?: boolean } | undefined;
}

/**
 * The relay ConfigMap of `run`: every Approval naming it, bound to its uid, valid and not yet consumed (oldest
 * first, at most {@link MAX_RELAYED_ANSWERS}). Owned by the Run without being its controller, so garbage collection
 * removes it with the Run while the Run reconciler leaves it alone.
 */
export function buildApprovalRelay(run: RunRef, agent: string, approvals: readonly RelayedApproval[]): KubeObject {
  const entries: [string, ApprovalRelayEntry][] = [];
  const sorted = [...approvals].sort((a, b) => String(a.metadata.creationTimestamp ?? "").localeCompare(String(b.metadata.creationTimestamp ?? "")) || a.metadata.name.localeCompare(b.metadata.name));
  for (const a of sorted) {
    if (a.metadata.labels?.[LABEL.runUid] !== run.uid || a.status?.consumed === true || !a.metadata.uid || a.metadata.deletionTimestamp) continue;
    const spec = ApprovalSpecSchema.safeParse(a.spec);
    if (!spec.success || spec.data.runRef.name !== run.name) continue;
    const { approvalId, decision, reason, approvedBy } = spec.data;
    entries.push([`${APPROVAL_RELAY_KEY.answerPrefix}${a.metadata.uid}`, { approval: a.metadata.name, approvalId, decision, ...(reason !== undefined ? { reason } : {}), ...(approvedBy !== undefined ? { approvedBy } : {}) }]);
    if (entries.length === MAX_RELAYED_ANSWERS) break;
  }
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: buildChildNames(run.name).approvals,
      namespace: run.namespace,
      labels: buildRunLabels(run.name, agent, COMPONENT.approvals),
      ownerReferences: [{ apiVersion: API_VERSION, kind: KIND.run, name: run.name, uid: run.uid, controller: false, blockOwnerDeletion: false }],
    },
    data: { [APPROVAL_RELAY_KEY.runUid]: run.uid, ...Object.fromEntries(entries.map(([k, v]) => [k, JSON.stringify(v)])) },
  };
}
