import { RunSpecSchema, type RunSpec } from "../../api/run.ts";
import { API_VERSION, KIND } from "../../api/constants.ts";
import { formatApiTime } from "../../api/time.ts";
import { CONDITION, REASON, TERMINAL_PHASES, type NetworkEnforcementStatus, type RunStatus } from "../../api/status.ts";
import { isApiStatus } from "../../kube/errors.ts";
import type { EventSink, ObjectReference } from "../../kube/event-recorder.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildChildNames, type RunRef } from "../../sandbox/names.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import { buildRunChildren } from "../../sandbox/run-children.ts";
import { computeSandboxPlan } from "../../sandbox/sandbox-plan.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "../cluster-port.ts";
import { formatFieldPath, isSameStatus } from "../conditions.ts";
import { decideErrorReason } from "../error-reasons.ts";
import { buildObjectKey, parseObjectKey } from "../object-key.ts";
import { decideNetworkRefusal, ENFORCEMENT_UNCHECKED } from "./network-condition.ts";
import { computeEffectivePolicy, type PolicyState } from "../policy/policy-state.ts";
import { computeTtlExpiryMs, type ObservedPod } from "./run-completion.ts";
import { decidePodsWaiting, observePod } from "./pods-waiting.ts";
import { decidePodSecurityCondition } from "./pod-security-condition.ts";
import { checkCredentials } from "./run-credentials.ts";
import { settleAll } from "../applied.ts";
import { createChildWriter, POD_PREREQUISITES, type PodObject } from "./run-children-sync.ts";
import { decideRun } from "./run-decision.ts";
import { createSnapshotPinner, type Blocked, type PinnedSnapshot } from "./run-pinning.ts";
import { resolveResume } from "./run-resume.ts";
import { createTransitionRecorder } from "../status-events.ts";
import { buildBlockedRunStatus, buildRunStatus, overlayControllerFields, pickControllerFields } from "./run-status.ts";

/** What the Run reconciler needs. */
export interface RunReconcilerDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  policy: () => PolicyState;
  settings: PodSettings;
  nowMs: () => number;
  /** The NetworkPolicy probe's last finding (NetworkIsolated, and `onUnverified: refuse`). */
  networkEnforcement?: () => NetworkEnforcementStatus;
  /** Where the Events of status transitions go (none: not recorded). */
  events?: EventSink;
}

type RunObject = KubeObject & { spec?: unknown; status?: RunStatus; metadata: { uid?: string; generation?: number; deletionTimestamp?: unknown } };

/** A Run refused for unverified enforcement looks again this often (a probe result also requeues it). */
const NETWORK_REFUSAL_RECHECK_MS = 60_000;
/** What a stopped run loses; its ConfigMap and workspace claim stay until the Run is deleted. */
const STOPPED_KINDS = new Set(["Pod", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"]);
/** What a finished Run's later passes delete again if anything brought it back: its pods stay as they ended. */
const FINISHED_KINDS = new Set([...STOPPED_KINDS].filter((k) => k !== "Pod"));
/** Thrown into the child writes when the start snapshot written in this pass is not the one the server holds. */
class SnapshotRefused extends Error {
  override readonly name = "SnapshotRefused";
  readonly blocked: Blocked;
  constructor(blocked: Blocked) {
    super(blocked.message);
    this.blocked = blocked;
  }
}

/** The `action` of the Events of a Run's status transitions. */
const RUN_ACTION = "Reconcile";

const referenceOf = (ref: RunRef): ObjectReference => ({ apiVersion: API_VERSION, kind: KIND.run, name: ref.name, namespace: ref.namespace, uid: ref.uid });

/** Reconcile one Run: pin its policy once, build its children, write them, prune the rest, report status. */
export function createRunReconciler(deps: RunReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const { cache, writer } = deps;
  const recordTransitions = createTransitionRecorder(deps.events);
  const pinSnapshot = createSnapshotPinner(deps);
  const { syncChildren } = createChildWriter(cache, writer);
  // The status this controller last wrote for each Run, with the resourceVersion of the Run it was computed from.
  // A pass whose cached Run is still at that version has not seen the write: its previous status is the written
  // one. A stale previous would undo a one-time transition (NetworkPolicyRestored, a restore time) and the
  // same-status check would then skip the correction for good. An entry goes once the cache has moved past it.
  const written = new Map<string, { fromRv: string | undefined; status: RunStatus }>();

  async function writeStatus(run: RunObject, ref: RunRef, status: RunStatus): Promise<void> {
    if (isSameStatus(pickControllerFields(run.status), status)) return;
    try {
      await writer.applyStatus("run", ref.namespace, ref.name, status);
      written.set(buildObjectKey(ref.namespace, ref.name), { fromRv: run.metadata.resourceVersion, status });
    } catch (err) {
      // Deleted while this pass ran (a TTL, a person): there is nothing left to report on.
      if (!isApiStatus(err, 404)) throw err;
      return;
    }
    recordTransitions(referenceOf(ref), run.status?.conditions, status.conditions, RUN_ACTION);
  }

  /**
   * A finished Run's sidecar reads no Approval: the approval controller's reader Role and its binding (owned by
   * the Run without being its controller, so the prune of its own children leaves them) go with the sidecar's Role.
   */
  async function dropApprovalReader(ref: RunRef): Promise<void> {
    const name = buildChildNames(ref.name).approvalReader;
    const live = (["role", "roleBinding"] as const).map((kind) => cache.get(kind, ref.namespace, name))
      .filter((o): o is KubeObject => o !== undefined && !o.metadata.deletionTimestamp && (o.metadata.ownerReferences?.some((r) => r.uid === ref.uid) ?? false));
    await settleAll(live.map((o) => writer.delete(o)));
  }

  /** The cached Run, with the status this controller last wrote where the cache has not caught up with it. */
  function withOwnWrite(key: string, cached: RunObject | undefined): RunObject | undefined {
    const own = written.get(key);
    if (own === undefined) return cached;
    if (cached === undefined || own.fromRv !== cached.metadata.resourceVersion) {
      written.delete(key);
      return cached;
    }
    return { ...cached, status: overlayControllerFields(cached.status, own.status) };
  }

  /** The part of a pass once the run has its snapshot: decide, write the children, write the status. */
  async function reconcileResolved(run: RunObject, ref: RunRef, spec: RunSpec, snapshot: PinnedSnapshot, at: { generation: number; nowIso: string; isOver: boolean }): Promise<ReconcileResult> {
    const { name, namespace } = ref;
    const { generation, nowIso, isOver } = at;
    const plan = computeSandboxPlan(name, snapshot.runPolicy);
    const pods = new Map<string, ObservedPod>();
    const ownedNow = cache.listOwnedBy(ref.uid);
    for (const obj of ownedNow) if (obj.kind === "Pod") pods.set(obj.metadata.name, observePod(obj as PodObject));
    const networkEnforcement = deps.networkEnforcement?.() ?? ENFORCEMENT_UNCHECKED;
    const refusal = networkRefusal(run, plan, pods.size > 0, networkEnforcement);
    if (refusal) {
      const refused = await snapshot.accepted;
      if (refused) return stop(run, ref, refused, at);
      await writeStatus(run, ref, buildBlockedRunStatus(generation, run.status, "Pending", REASON.networkNotVerified, refusal, nowIso, snapshot.sha256));
      return { requeueAfterMs: NETWORK_REFUSAL_RECHECK_MS };
    }
    const resumed = await resolveResume({ cache, writer, policy: deps.policy }, { ref, annotations: run.metadata.annotations, status: run.status, snapshot, nowIso });
    // Looked up live until the engine pod exists (afterwards the kubelet holds what it needs), and once more when the
    // status seen here does not carry the answer yet (a cache behind our own write would drop the condition).
    const kept = run.status?.conditions?.find((c) => c.type === CONDITION.credentialsReady);
    const credentials = isOver
      ? undefined
      : !pods.has(buildChildNames(name).enginePod) || kept === undefined
        ? await checkCredentials(writer, namespace, snapshot.controller.credentials)
        : { type: kept.type, status: kept.status, reason: kept.reason, message: kept.message };
    const ns = cache.get("namespace", undefined, namespace);
    const decision = decideRun({
      name, spec: spec, previous: run.status, snapshot, plan, pods,
      podSecurity: decidePodSecurityCondition(namespace, ns ? ns.metadata.labels ?? {} : undefined),
      hasRuntimeClass: (rc) => cache.get("runtimeClass", undefined, rc) !== undefined,
      credentials, podsWaiting: decidePodsWaiting(pods, ownedNow), nowMs: deps.nowMs(), nowIso,
      networkPolicyMissing: await isNetworkPolicyGone(ref, ownedNow, run.status), networkEnforcement,
    });
    const desired = buildRunChildren({
      run: ref, snapshot, settings: deps.settings, sandboxes: decision.sandboxes, hostExec: decision.hostExec, lifecycle: decision.lifecycle,
      ...(decision.draining ? { draining: true } : {}), ...(decision.holdEngine ? { holdEngine: true } : {}),
    });
    let requeue: number | undefined;
    // On the pass that writes the snapshot: a pod's prerequisites go out beside it, the rest once it is accepted.
    const pinned = snapshot.accepted?.then((refused) => {
      if (refused) throw new SnapshotRefused(refused);
    });
    try {
      requeue = await syncChildren(ref, desired, decision.lifecycle === "active", pinned);
    } catch (err) {
      if (err instanceof SnapshotRefused) return stop(run, ref, err.blocked, at, desired.filter((o) => POD_PREREQUISITES.has(o.kind)));
      // The snapshot's own write failed: nothing is pinned, so no status may say it is; the loop retries.
      if (snapshot.accepted !== undefined && await snapshot.accepted.then(() => false, () => true)) throw err;
      // Say on the Run why it is stuck (a Pod Security refusal, a quota), then let the loop retry with backoff.
      // The server's text stays the message; the condition's reason says what kind of refusal it was.
      const message = `writing the Run's children failed: ${(err as Error).message}`;
      const refused = { type: CONDITION.childrenFailure, status: "True" as const, reason: decideErrorReason(err), message };
      const failed = { ...decision, message, conditions: [...decision.conditions, refused] };
      deps.events?.record(referenceOf(ref), { type: "Warning", reason: REASON.failedCreate, action: "Create", note: failed.message });
      await writeStatus(run, ref, buildRunStatus(name, generation, snapshot, failed, run.status, nowIso)).catch(() => undefined);
      throw err;
    }
    const finished = TERMINAL_PHASES.includes(decision.phase);
    if (finished) await dropApprovalReader(ref);
    const status = buildRunStatus(name, generation, snapshot, decision, run.status, nowIso, resumed);
    await writeStatus(run, ref, status);
    const expiry = finished ? computeTtlExpiryMs(spec, status) : undefined;
    const after = [requeue, decision.requeueAfterMs, expiry === undefined ? undefined : Math.max(1, expiry - deps.nowMs())].filter((n): n is number => n !== undefined);
    return after.length ? { requeueAfterMs: Math.min(...after) } : {};
  }

  /**
   * Whether the Run's NetworkPolicy, applied on an earlier pass (its condition was True), is gone: absent from
   * the cache and, asked live so that a cache still catching up is not taken for a deletion, from the server.
   */
  async function isNetworkPolicyGone(ref: RunRef, owned: readonly KubeObject[], previous: RunStatus | undefined): Promise<boolean> {
    if (owned.some((o) => o.kind === "NetworkPolicy")) return false;
    if (previous?.conditions?.find((c) => c.type === CONDITION.networkIsolated)?.status !== "True") return false;
    return (await writer.read("networkPolicy", ref.namespace, buildChildNames(ref.name).networkPolicy)) === undefined;
  }

  /** Why a Run may not start yet under `onUnverified: refuse` (undefined: it may). */
  function networkRefusal(run: RunObject, plan: ReturnType<typeof computeSandboxPlan>, hasPods: boolean, enforcement: NetworkEnforcementStatus): string | undefined {
    const started = hasPods || TERMINAL_PHASES.includes(run.status?.phase ?? "Pending");
    return decideNetworkRefusal({ plan, started, enforcement, spec: computeEffectivePolicy(deps.policy())?.spec.networkEnforcement });
  }

  /**
   * Deletes what a stopped Run loses: its owned children of `kinds` (and `written`, what this pass wrote that the
   * cache may not hold yet), then the approval reader.
   */
  async function deleteStopped(ref: RunRef, kinds: ReadonlySet<string>, written: readonly KubeObject[] = []): Promise<void> {
    const owned = cache.listOwnedBy(ref.uid).filter((o) => kinds.has(o.kind) && !o.metadata.deletionTimestamp);
    const uncached = written.filter((w) => !owned.some((o) => o.kind === w.kind && o.metadata.name === w.metadata.name));
    for (const obj of [...owned, ...uncached]) await writer.delete(obj);
    await dropApprovalReader(ref);
  }

  /**
   * A Run that may not go on: its status says why. One that failed loses what may run or act for it, including
   * what this pass wrote and the cache may not hold yet (`written`).
   */
  async function stop(run: RunObject, ref: RunRef, blocked: Blocked, at: { generation: number; nowIso: string }, written: readonly KubeObject[] = []): Promise<ReconcileResult> {
    // A run that can no longer be resolved is over: nothing of it may keep running.
    if (blocked.phase === "Failed") await deleteStopped(ref, STOPPED_KINDS, written);
    await writeStatus(run, ref, buildBlockedRunStatus(at.generation, run.status, blocked.phase, blocked.reason, blocked.message, at.nowIso, blocked.sha256));
    return blocked.recheckMs !== undefined ? { requeueAfterMs: blocked.recheckMs } : {};
  }

  /**
   * A finished Run whose pinned snapshot can no longer be read (its ConfigMap deleted or replaced after it ended)
   * keeps its phase, reason and message: a terminal phase is never left. Nothing of it may run, so what a
   * finished Run loses is deleted again if anything brought it back; its TTL still applies.
   */
  async function stayFinished(ref: RunRef, ttl: number | undefined): Promise<ReconcileResult> {
    await deleteStopped(ref, FINISHED_KINDS);
    return ttl === undefined ? {} : { requeueAfterMs: Math.max(1, ttl - deps.nowMs()) };
  }

  return async (key) => {
    const { namespace, name } = parseObjectKey(key);
    if (namespace === undefined) return {};
    const run = withOwnWrite(key, cache.get("run", namespace, name) as RunObject | undefined);
    if (!run || run.metadata.deletionTimestamp || !run.metadata.uid) return {};
    const ref: RunRef = { name, namespace, uid: run.metadata.uid };
    const generation = run.metadata.generation ?? 0;
    const nowIso = formatApiTime(deps.nowMs());
    const isOver = run.status?.phase !== undefined && TERMINAL_PHASES.includes(run.status.phase);
    const parsed = RunSpecSchema.safeParse(structuredClone(run.spec ?? {}));
    // A finished Run never leaves its phase: an edit of its spec changes nothing (its TTL is read as it was).
    if (!parsed.success && isOver) return {};
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const message = `${issue ? formatFieldPath("spec", issue.path) : "spec"}: ${issue?.message ?? "invalid"}`;
      await writeStatus(run, ref, buildBlockedRunStatus(generation, run.status, "Failed", REASON.invalidSpec, message, nowIso));
      return {};
    }
    const ttl = computeTtlExpiryMs(parsed.data, run.status);
    if (isOver && ttl !== undefined && deps.nowMs() >= ttl) {
      // ttlSecondsAfterFinished: the Run goes, and garbage collection takes every child with it.
      await writer.delete(run);
      return {};
    }
    const snapshot = await pinSnapshot(ref, parsed.data, run.status);
    if ("blocked" in snapshot && isOver) return stayFinished(ref, ttl);
    if ("blocked" in snapshot) return stop(run, ref, snapshot, { generation, nowIso });
    try {
      return await reconcileResolved(run, ref, parsed.data, snapshot, { generation, nowIso, isOver });
    } finally {
      // However the pass ends, the snapshot's write is not left in flight.
      await snapshot.accepted?.catch(() => undefined);
    }
  };
}
