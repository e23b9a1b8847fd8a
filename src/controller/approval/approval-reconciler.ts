// The Approval controller: binds each Approval to the uid of the Run it names (label, owner reference, the Run's
// sidecar named for admission), reports on Approvals that answer nothing, and deletes consumed, orphaned, stale and
// invalid ones after their TTL. It relays the answers bound to a Run into that Run's `<run>-approvals` ConfigMap,
// which the Run's sidecar watches (it cannot list Approvals), and grants that sidecar `get` on exactly the
// Approvals relayed, against which it checks each answer before applying it.
import type { ApprovalStatus } from "../../api/approval.ts";
import { API_VERSION, KIND, LABEL } from "../../api/constants.ts";
import { formatApiTime } from "../../api/time.ts";
import { TERMINAL_PHASES, type Condition, type RunStatus } from "../../api/status.ts";
import type { EventSink, ObjectReference } from "../../kube/event-recorder.ts";
import { KubeApiError } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildApprovalRelayObjects } from "../../sandbox/approval-relay.ts";
import { buildChildNames, COMPONENT } from "../../sandbox/names.ts";
import { decideApproval, type ApprovalRunInput } from "./approval-decision.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "../cluster-port.ts";
import { isApplied, isExactly } from "../applied.ts";
import { buildConditions, isSameStatus } from "../conditions.ts";
import { parseObjectKey } from "../object-key.ts";
import { createTransitionRecorder, type TransitionRecorder } from "../status-events.ts";
import { APPROVAL_ACTION, computeApprovalEvents } from "./approval-events.ts";

/** What the Approval reconciler needs. */
export interface ApprovalReconcilerDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  nowMs: () => number;
  ttlMs: number;
  /** Where the Events of an Approval's condition changes go (none: not recorded). */
  events?: EventSink;
}

type ApprovalObject = KubeObject & { spec?: { runRef?: { name?: unknown } }; status?: ApprovalStatus };
type RunObject = KubeObject & { spec?: { agentRef?: { name?: unknown } }; status?: RunStatus };

const approvalReference = (obj: KubeObject): ObjectReference => ({
  apiVersion: API_VERSION, kind: KIND.approval, name: obj.metadata.name, ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}), ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
});

const createdMs = (obj: KubeObject) => Date.parse(String(obj.metadata.creationTimestamp ?? "")) || 0;

function runInput(cache: ClusterCache, run: RunObject | undefined): ApprovalRunInput | undefined {
  if (!run?.metadata.uid || run.metadata.deletionTimestamp) return undefined;
  return {
    name: run.metadata.name,
    uid: run.metadata.uid,
    createdMs: createdMs(run),
    pendingIds: (run.status?.pendingApprovals ?? []).map((p) => p.id),
    sidecarServiceAccount: findSidecarServiceAccount(cache, run),
  };
}

/**
 * The ServiceAccount the Run's sidecar runs as: `<run>-sidecar`; for a Run that adopted a pool pod, that pod's own,
 * the pod its status names, only while the cache shows that pod controlled by the Run and made for a pool
 * (the controller's writes: a status edit alone names no other account). Otherwise the cold name, as which no pod of
 * an adopted Run runs: its sidecar then reads no Approval and writes none (fails closed).
 */
export function findSidecarServiceAccount(cache: ClusterCache, run: RunObject): string {
  const cold = buildChildNames(run.metadata.name).serviceAccount;
  const { startedFrom, enginePod } = run.status ?? {};
  if (startedFrom !== "pool" || enginePod === undefined || !run.metadata.namespace || !run.metadata.uid) return cold;
  const pod = cache.get("pod", run.metadata.namespace, enginePod);
  const controlled = pod?.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === run.metadata.uid) === true;
  // A pool pod's ServiceAccount is named like the pod (buildPoolNames; the cache keeps no pod spec).
  return controlled && pod?.metadata.labels?.[LABEL.pool] !== undefined ? pod.metadata.name : cold;
}

/** The name of the Run an Approval names, if its spec says one. */
export function approvalRunName(obj: KubeObject): string | undefined {
  const name = (obj as ApprovalObject).spec?.runRef?.name;
  return typeof name === "string" ? name : undefined;
}

/**
 * Rewrite the Run's relay when it is not exactly the answers bound to it. The Role that lets the sidecar read those
 * Approvals goes first (the sidecar checks each relayed answer against its Approval). The relay is replaced whole
 * (PUT), never applied: an apply keeps keys someone else added, and anyone who may write ConfigMaps in the
 * namespace may write it (or create it before the controller does).
 */
async function relayAnswers(deps: ApprovalReconcilerDeps, run: RunObject): Promise<ReconcileResult> {
  const { name, namespace, uid } = run.metadata;
  // A finished Run has no prompt left to answer: its reader goes with its sidecar's Role (the Run reconciler).
  if (!namespace || !uid || TERMINAL_PHASES.includes(run.status?.phase ?? "Pending")) return {};
  const approvals = deps.cache.list("approval", namespace).filter((a) => approvalRunName(a) === name);
  const { role, roleBinding, relay } = buildApprovalRelayObjects({ name, namespace, uid }, runAgentName(run), approvals, findSidecarServiceAccount(deps.cache, run));
  const bindingInPlace = isApplied(roleBinding, deps.cache.get("roleBinding", namespace, roleBinding.metadata.name));
  // The binding after its Role: a binding to a Role the operator may not `bind` is checked against the Role's rules,
  // and the server refuses it (not found) while that Role does not exist yet.
  if (!isRoleInPlace(deps.cache, role)) await deps.writer.apply(role);
  if (!bindingInPlace && !await writeUnlessRaced(() => deps.writer.apply(roleBinding), 404)) return { requeueAfterMs: RELAY_RECHECK_MS };
  const current = deps.cache.get("configMap", namespace, relay.metadata.name);
  if (!isExactly(relay, current) && !await writeUnlessRaced(() => deps.writer.replace(relay, current?.metadata.resourceVersion), 409)) return { requeueAfterMs: RELAY_RECHECK_MS };
  return {};
}

/** How soon a relay whose write lost a race (its reader Role gone, another write first) is looked at again: the cache has caught up by then. */
const RELAY_RECHECK_MS = 1000;

/**
 * Makes one of the relay's writes; false when the server answers with `raced`, the one status that means this pass
 * saw the cluster a moment late, which is the healthy cluster's case and rechecked, not counted as an error:
 * - 404 on the reader's binding: its Role is gone, dropped by the Run reconciler as the Run finished while this pass
 *   still saw the Run running and the Role in its cache. The next pass sees the Run's end (and writes nothing) or the
 *   Role missing (and writes it, then the binding).
 * - 409 on the relay's replace: another Approval of the Run rewrote it first at the same cached version. The next
 *   pass compares against the relay as it now is.
 */
async function writeUnlessRaced(write: () => Promise<void>, raced: 404 | 409): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    if (err instanceof KubeApiError && err.code === raced) return false;
    throw err;
  }
}

const runAgentName = (run: RunObject): string => typeof run.spec?.agentRef?.name === "string" ? run.spec.agentRef.name : "";

/** Whether the reader Role is in the cache as built. The server may keep a Role without rules as `rules: null`, so its rules are compared as lists. */
function isRoleInPlace(cache: ClusterCache, role: KubeObject): boolean {
  const liveRole = cache.get("role", role.metadata.namespace, role.metadata.name) as (KubeObject & { rules?: unknown[] | null }) | undefined;
  return liveRole !== undefined && isApplied(role.metadata, liveRole.metadata) && isSameStatus((role as { rules?: unknown }).rules, liveRole.rules ?? []);
}

/** An Approval deleted (or being deleted) leaves every relay that still holds it: a retracted answer never applies. */
async function dropFromRelays(deps: ApprovalReconcilerDeps, namespace: string, name: string): Promise<ReconcileResult> {
  let result: ReconcileResult = {};
  for (const cm of deps.cache.list("configMap", namespace) as (KubeObject & { data?: Record<string, string> })[]) {
    if (cm.metadata.labels?.[LABEL.component] !== COMPONENT.approvals) continue;
    const holds = Object.values(cm.data ?? {}).some((text) => text.includes(`"approval":${JSON.stringify(name)}`));
    const runName = cm.metadata.ownerReferences?.[0]?.name;
    const run = holds && runName ? deps.cache.get("run", namespace, runName) as RunObject | undefined : undefined;
    if (run && (await relayAnswers(deps, run)).requeueAfterMs !== undefined) result = { requeueAfterMs: RELAY_RECHECK_MS };
  }
  return result;
}

/** Writes the Approval's conditions when they changed, and records the Events of the change. */
async function writeConditions(deps: ApprovalReconcilerDeps, obj: ApprovalObject, conditions: Condition[], record: TransitionRecorder): Promise<void> {
  const before = obj.status?.conditions;
  if (isSameStatus(before, conditions)) return;
  await deps.writer.applyStatus("approval", obj.metadata.namespace, obj.metadata.name, { conditions });
  record(approvalReference(obj), before, conditions, APPROVAL_ACTION);
}

/** Reconcile one Approval. */
export function createApprovalReconciler(deps: ApprovalReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const recordTransitions = createTransitionRecorder(deps.events, computeApprovalEvents);
  return async (key) => {
    const { namespace, name } = parseObjectKey(key);
    if (namespace === undefined) return {};
    const obj = deps.cache.get("approval", namespace, name) as ApprovalObject | undefined;
    if (!obj || obj.metadata.deletionTimestamp) return dropFromRelays(deps, namespace, name);
    return reconcileApproval(deps, obj, namespace, recordTransitions);
  };
}

/** One live Approval: decide it against its Run, then delete it, or bind it, write its status and relay its Run's answers. */
async function reconcileApproval(deps: ApprovalReconcilerDeps, obj: ApprovalObject, namespace: string, recordTransitions: TransitionRecorder): Promise<ReconcileResult> {
  const { name } = obj.metadata;
  const runName = approvalRunName(obj);
  const run = runName ? deps.cache.get("run", namespace, runName) as RunObject | undefined : undefined;
  const now = deps.nowMs();
  const decision = decideApproval({ spec: obj.spec, status: obj.status, createdMs: createdMs(obj), labels: obj.metadata.labels ?? {} }, runInput(deps.cache, run), now, deps.ttlMs);
  if (decision.deleteAtMs !== undefined && decision.deleteAtMs <= now) {
    await deps.writer.delete(obj);
    return {};
  }
  if (decision.bind) {
    const { labels, annotations, ownerReference } = decision.bind;
    await deps.writer.apply({ apiVersion: API_VERSION, kind: KIND.approval, metadata: { name, namespace, labels, annotations, ownerReferences: [ownerReference] } });
  }
  const conditions = buildConditions(obj.status?.conditions, decision.conditions, formatApiTime(now), obj.metadata.generation ?? 0);
  await writeConditions(deps, obj, conditions, recordTransitions);
  // Bound now or before: the relay follows (the Approval's new labels bring it back through the cache).
  const relayed = run && !decision.bind && obj.metadata.labels?.[LABEL.runUid] === run.metadata.uid ? await relayAnswers(deps, run) : {};
  const deleteIn = decision.deleteAtMs !== undefined ? decision.deleteAtMs - now : undefined;
  const requeues = [relayed.requeueAfterMs, deleteIn].filter((ms): ms is number => ms !== undefined);
  return requeues.length > 0 ? { requeueAfterMs: Math.min(...requeues) } : {};
}
