// The per-Run approval relay: a ConfigMap the Approval controller (trusted) writes with the validated answers of
// the Approvals bound to one Run, and that Run's sidecar reads by name. RBAC cannot narrow list/watch of Approvals
// by label, so without it the sidecar would read every Approval of its namespace. Anyone who may write ConfigMaps
// in the namespace can write the relay too, so it only tells the sidecar which Approvals to read: a Role the
// controller writes beside it (the approval reader) lets the sidecar get exactly the Approvals it relays, and the
// sidecar acts only on what it reads from them.
import { APPROVAL_RELAY_KEY, ApprovalSpecSchema, MAX_RELAYED_ANSWERS, type ApprovalRelayEntry } from "../api/approval.ts";
import { API_VERSION, GROUP, KIND, LABEL } from "../api/constants.ts";
import { PLURAL } from "../api/crd-definitions.ts";
import type { KubeObject } from "./kube-types.ts";
import { buildChildNames, buildRunLabels, COMPONENT, type RunRef } from "./names.ts";

/** An Approval as the relay reads it. */
export interface RelayedApproval {
  metadata: { name: string; uid?: string | undefined; creationTimestamp?: unknown; deletionTimestamp?: unknown; labels?: Record<string, string> | undefined };
  spec?: unknown;
  status?: { consumed?: boolean } | undefined;
}

/** The Run's objects the relay consists of; each owned by the Run without being its controller (see below). */
export interface ApprovalRelayObjects {
  /** Lets the sidecar get exactly the relayed Approvals (no rule at all while there are none). */
  role: KubeObject;
  roleBinding: KubeObject;
  relay: KubeObject;
}

/**
 * The relay of `run` and the Role that lets its sidecar (ServiceAccount `sidecar`: `<run>-sidecar`, or an adopted pool
 * pod's own) check each relayed answer against its Approval. Owned by
 * the Run without being its controller, so garbage collection removes them with the Run while the Run reconciler
 * leaves them alone.
 */
export function buildApprovalRelayObjects(run: RunRef, agent: string, approvals: readonly RelayedApproval[], sidecar = buildChildNames(run.name).serviceAccount): ApprovalRelayObjects {
  const entries = selectRelayed(run, approvals);
  return { ...buildApprovalReader(run, { agent, sidecar }, entries.map(([, e]) => e.approval)), relay: buildRelayConfigMap(run, agent, entries) };
}

/**
 * The sidecar's Role to get exactly the Approvals `names` and its binding. With no names it has no rule: an empty
 * `resourceNames` would mean every Approval.
 */
function buildApprovalReader(run: RunRef, by: { agent: string; sidecar: string }, names: readonly string[]): { role: KubeObject; roleBinding: KubeObject } {
  const childNames = buildChildNames(run.name);
  const metadata = { ...relayMetadata(run, by.agent), name: childNames.approvalReader };
  const rules = names.length > 0 ? [{ apiGroups: [GROUP], resources: [PLURAL.approval], verbs: ["get"], resourceNames: [...names].sort() }] : [];
  return {
    role: { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata, rules },
    roleBinding: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: childNames.approvalReader },
      subjects: [{ kind: "ServiceAccount", name: by.sidecar, namespace: run.namespace }],
    },
  };
}

function relayMetadata(run: RunRef, agent: string) {
  return {
    namespace: run.namespace,
    labels: buildRunLabels(run.name, agent, COMPONENT.approvals),
    ownerReferences: [{ apiVersion: API_VERSION, kind: KIND.run, name: run.name, uid: run.uid, controller: false, blockOwnerDeletion: false }],
  };
}

/**
 * The answers relayed to `run`: every Approval naming it, bound to its uid, valid and not yet consumed (oldest
 * first, at most {@link MAX_RELAYED_ANSWERS}), keyed by the Approval's uid.
 */
function selectRelayed(run: RunRef, approvals: readonly RelayedApproval[]): [string, ApprovalRelayEntry][] {
  const entries: [string, ApprovalRelayEntry][] = [];
  const sorted = [...approvals].sort((a, b) => String(a.metadata.creationTimestamp ?? "").localeCompare(String(b.metadata.creationTimestamp ?? "")) || a.metadata.name.localeCompare(b.metadata.name));
  for (const a of sorted) {
    if (a.metadata.labels?.[LABEL.runUid] !== run.uid || a.status?.consumed === true || !a.metadata.uid || a.metadata.deletionTimestamp) continue;
    const spec = ApprovalSpecSchema.safeParse(a.spec);
    if (!spec.success || spec.data.runRef.name !== run.name) continue;
    const { approvalId, decision, reason, approvedBy } = spec.data;
    entries.push([a.metadata.uid, { approval: a.metadata.name, approvalId, decision, ...(reason !== undefined ? { reason } : {}), ...(approvedBy !== undefined ? { approvedBy } : {}) }]);
    if (entries.length === MAX_RELAYED_ANSWERS) break;
  }
  return entries;
}

function buildRelayConfigMap(run: RunRef, agent: string, entries: readonly [string, ApprovalRelayEntry][]): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { ...relayMetadata(run, agent), name: buildChildNames(run.name).approvals },
    data: { [APPROVAL_RELAY_KEY.runUid]: run.uid, ...Object.fromEntries(entries.map(([uid, v]) => [`${APPROVAL_RELAY_KEY.answerPrefix}${uid}`, JSON.stringify(v)])) },
  };
}

/** The relay ConfigMap of `run` alone (see {@link selectRelayed}). */
export function buildApprovalRelay(run: RunRef, agent: string, approvals: readonly RelayedApproval[]): KubeObject {
  return buildRelayConfigMap(run, agent, selectRelayed(run, approvals));
}
