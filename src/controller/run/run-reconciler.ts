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
import { computeSandboxPlan, type SandboxPlan } from "../../sandbox/sandbox-plan.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "../cluster-port.ts";
import { formatFieldPath, isSameStatus, type ConditionDecision } from "../conditions.ts";
import { decideErrorReason } from "../error-reasons.ts";
import { buildObjectKey, parseObjectKey } from "../object-key.ts";
import { decideNetworkRefusal, ENFORCEMENT_UNCHECKED, isNetworkPolicyApplied } from "./network-condition.ts";
import { computeEffectivePolicy, type PolicyState } from "../policy/policy-state.ts";
import { computeTtlExpiryMs, type ObservedPod } from "./run-completion.ts";
import { decidePodsWaiting, observePod } from "./pods-waiting.ts";
import { decidePodSecurityCondition } from "./pod-security-condition.ts";
import { checkCredentials } from "./run-credentials.ts";
import { settleAll } from "../applied.ts";
import { createChildWriter, POD_PREREQUISITES, type PodObject } from "./run-children-sync.ts";
import { decideRun, type RunDecision } from "./run-decision.ts";
import { createSnapshotPinner, type Blocked, type PinnedSnapshot } from "./run-pinning.ts";
import { resolveResume } from "./run-resume.ts";
import { createTransitionRecorder } from "../status-events.ts";
import { buildBlockedRunStatus, buildRunStatus, overlayControllerFields, pickControllerFields, type EngineBinding, type StatusBasis } from "./run-status.ts";
import { bindEngine, listSparedChildren } from "./run-adoption.ts";
import type { PoolLedger } from "../pool/pool-ledger.ts";

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
  /** With warm pools on: Runs adopt pool pods, and each adoption and miss is counted here. */
  pools?: PoolLedger | undefined;
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

/** What every step of a pass shares: the dependencies, and the status this controller last wrote for each Run. */
interface RunContext {
  readonly deps: RunReconcilerDeps;
  readonly cache: ClusterCache;
  readonly writer: ClusterWriter;
  /**
   * The status this controller last wrote for each Run, with the resourceVersion of the Run it was computed from.
   * A pass whose cached Run is still at that version has not seen the write: its previous status is the written
   * one. A stale previous would undo a one-time transition (NetworkPolicyRestored, a restore time) and the
   * same-status check would then skip the correction for good. An entry goes once the cache has moved past it.
   */
  readonly written: Map<string, { fromRv: string | undefined; status: RunStatus }>;
  readonly recordTransitions: ReturnType<typeof createTransitionRecorder>;
  readonly pinSnapshot: ReturnType<typeof createSnapshotPinner>;
  readonly syncChildren: ReturnType<typeof createChildWriter>["syncChildren"];
}

/** One pass over one Run: the Run as read (with this controller's last write), its reference, and when the pass is. */
interface Pass {
  readonly run: RunObject;
  readonly ref: RunRef;
  readonly generation: number;
  readonly nowIso: string;
  /** The Run was already in a terminal phase when the pass began. */
  readonly isOver: boolean;
}

const basisOf = (pass: Pass): StatusBasis => ({ generation: pass.generation, previous: pass.run.status, nowIso: pass.nowIso });

/** Reconcile one Run: pin its policy once, build its children, write them, prune the rest, report status. */
export function createRunReconciler(deps: RunReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const ctx: RunContext = {
    deps, cache: deps.cache, writer: deps.writer, written: new Map(),
    recordTransitions: createTransitionRecorder(deps.events),
    pinSnapshot: createSnapshotPinner(deps),
    syncChildren: createChildWriter(deps.cache, deps.writer).syncChildren,
  };
  return async (key) => {
    const pass = beginPass(ctx, key);
    if (!pass) return {};
    const { run, ref, isOver } = pass;
    const parsed = RunSpecSchema.safeParse(structuredClone(run.spec ?? {}));
    if (!parsed.success) return refuseInvalidSpec(ctx, pass, parsed.error.issues[0]);
    const ttl = computeTtlExpiryMs(parsed.data, run.status);
    if (isOver && ttl !== undefined && deps.nowMs() >= ttl) {
      // ttlSecondsAfterFinished: the Run goes, and garbage collection takes every child with it.
      await deps.writer.delete(run);
      return {};
    }
    const snapshot = await ctx.pinSnapshot(ref, parsed.data, run.status);
    if ("blocked" in snapshot && isOver) return stayFinished(ctx, ref, ttl);
    if ("blocked" in snapshot) return stop(ctx, pass, snapshot);
    try {
      return await reconcileResolved(ctx, pass, parsed.data, snapshot);
    } finally {
      // However the pass ends, the snapshot's write is not left in flight.
      await snapshot.accepted?.catch(() => undefined);
    }
  };
}

/** The pass for a key: undefined when there is nothing to reconcile (no such Run, being deleted, no uid yet). */
function beginPass(ctx: RunContext, key: string): Pass | undefined {
  const { namespace, name } = parseObjectKey(key);
  if (namespace === undefined) return undefined;
  const run = withOwnWrite(ctx, key, ctx.cache.get("run", namespace, name) as RunObject | undefined);
  if (!run || run.metadata.deletionTimestamp || !run.metadata.uid) return undefined;
  return {
    run,
    ref: { name, namespace, uid: run.metadata.uid },
    generation: run.metadata.generation ?? 0,
    nowIso: formatApiTime(ctx.deps.nowMs()),
    isOver: run.status?.phase !== undefined && TERMINAL_PHASES.includes(run.status.phase),
  };
}

/** An invalid spec fails the Run, naming the field; a finished Run never leaves its phase, so an edit of its spec changes nothing. */
async function refuseInvalidSpec(ctx: RunContext, pass: Pass, issue: { path: PropertyKey[]; message: string } | undefined): Promise<ReconcileResult> {
  if (pass.isOver) return {};
  const message = `${issue ? formatFieldPath("spec", issue.path) : "spec"}: ${issue?.message ?? "invalid"}`;
  await writeStatus(ctx, pass, buildBlockedRunStatus(basisOf(pass), { phase: "Failed", reason: REASON.invalidSpec, message }));
  return {};
}

async function writeStatus(ctx: RunContext, pass: Pass, status: RunStatus): Promise<void> {
  const { run, ref } = pass;
  if (isSameStatus(pickControllerFields(run.status), status)) return;
  try {
    await ctx.writer.applyStatus("run", ref.namespace, ref.name, status);
    ctx.written.set(buildObjectKey(ref.namespace, ref.name), { fromRv: run.metadata.resourceVersion, status });
  } catch (err) {
    // Deleted while this pass ran (a TTL, a person): there is nothing left to report on.
    if (!isApiStatus(err, 404)) throw err;
    return;
  }
  ctx.recordTransitions(referenceOf(ref), run.status?.conditions, status.conditions, RUN_ACTION);
}

/**
 * A finished Run's sidecar reads no Approval: the approval controller's reader Role and its binding (owned by
 * the Run without being its controller, so the prune of its own children leaves them) go with the sidecar's Role.
 */
async function dropApprovalReader(ctx: RunContext, ref: RunRef): Promise<void> {
  const name = buildChildNames(ref.name).approvalReader;
  const live = (["role", "roleBinding"] as const).map((kind) => ctx.cache.get(kind, ref.namespace, name))
    .filter((o): o is KubeObject => o !== undefined && !o.metadata.deletionTimestamp && (o.metadata.ownerReferences?.some((r) => r.uid === ref.uid) ?? false));
  await settleAll(live.map((o) => ctx.writer.delete(o)));
}

/** The cached Run, with the status this controller last wrote where the cache has not caught up with it. */
function withOwnWrite(ctx: RunContext, key: string, cached: RunObject | undefined): RunObject | undefined {
  const own = ctx.written.get(key);
  if (own === undefined) return cached;
  if (cached === undefined || own.fromRv !== cached.metadata.resourceVersion) {
    ctx.written.delete(key);
    return cached;
  }
  return { ...cached, status: overlayControllerFields(cached.status, own.status) };
}

/** The part of a pass once the run has its snapshot: decide, write the children, write the status. */
async function reconcileResolved(ctx: RunContext, pass: Pass, spec: RunSpec, snapshot: PinnedSnapshot): Promise<ReconcileResult> {
  const { run, ref } = pass;
  const planned = computeSandboxPlan(ref.name, snapshot.runPolicy);
  const ownedNow = ctx.cache.listOwnedBy(ref.uid);
  const pods = new Map<string, ObservedPod>();
  for (const obj of ownedNow) if (obj.kind === "Pod") pods.set(obj.metadata.name, observePod(obj as PodObject));
  const networkEnforcement = ctx.deps.networkEnforcement?.() ?? ENFORCEMENT_UNCHECKED;
  const refusal = networkRefusal(ctx, run, planned, { hasPods: pods.size > 0, enforcement: networkEnforcement });
  if (refusal) return refuseUnverifiedNetwork(ctx, pass, snapshot, refusal);
  const resumed = await resolveResume({ cache: ctx.cache, writer: ctx.writer, policy: ctx.deps.policy }, { ref, annotations: run.metadata.annotations, status: run.status, snapshot, nowIso: pass.nowIso });
  const ns = ctx.cache.get("namespace", undefined, ref.namespace);
  const { engine, credentials } = await resolveEngine(ctx, pass, { snapshot, pods, owned: ownedNow });
  const plan = planSandboxes(planned, engine, snapshot);
  const decision = decideRun({
    name: ref.name, spec, previous: run.status, snapshot, plan, pods, enginePod: engine?.pod,
    podSecurity: decidePodSecurityCondition(ref.namespace, ns ? ns.metadata.labels ?? {} : undefined),
    hasRuntimeClass: (rc) => ctx.cache.get("runtimeClass", undefined, rc) !== undefined,
    credentials, podsWaiting: decidePodsWaiting(pods, ownedNow), nowMs: ctx.deps.nowMs(), nowIso: pass.nowIso,
    networkPolicyMissing: await isNetworkPolicyGone(ctx, ref, ownedNow, run.status), networkEnforcement,
  });
  const written = await writeChildren(ctx, pass, snapshot, { decision, engine });
  if ("stopped" in written) return written.stopped;
  const finished = TERMINAL_PHASES.includes(decision.phase);
  if (finished) await dropApprovalReader(ctx, ref);
  const status = buildRunStatus(basisOf(pass), { name: ref.name, snapshot, decision, resumed, engine });
  await writeStatus(ctx, pass, status);
  const expiry = finished ? computeTtlExpiryMs(spec, status) : undefined;
  const after = [written.requeue, decision.requeueAfterMs, expiry === undefined ? undefined : Math.max(1, expiry - ctx.deps.nowMs())].filter((n): n is number => n !== undefined);
  return after.length ? { requeueAfterMs: Math.min(...after) } : {};
}

/** The Run's sandboxes: named after the Run, or, served from a warm pool, after its pool pod (whose own sandbox pods it adopted). */
function planSandboxes(planned: SandboxPlan[], engine: EngineBinding | undefined, snapshot: PinnedSnapshot): SandboxPlan[] {
  return engine?.from === "pool" && engine.paired === true ? computeSandboxPlan(engine.pod, snapshot.runPolicy) : planned;
}

/** Under `onUnverified: refuse`, a Run not started yet waits (Pending), unless its snapshot was refused meanwhile. */
async function refuseUnverifiedNetwork(ctx: RunContext, pass: Pass, snapshot: PinnedSnapshot, refusal: string): Promise<ReconcileResult> {
  const refused = await snapshot.accepted;
  if (refused) return stop(ctx, pass, refused);
  await writeStatus(ctx, pass, buildBlockedRunStatus(basisOf(pass), { phase: "Pending", reason: REASON.networkNotVerified, message: refusal, snapshotSha256: snapshot.sha256 }));
  return { requeueAfterMs: NETWORK_REFUSAL_RECHECK_MS };
}

/**
 * The engine pod the Run has (with warm pools on: adopted from a pool or cold, decided once) and CredentialsReady,
 * read first: a Run whose credential Secret is missing adopts nothing yet, as a cold one creates no engine pod.
 */
async function resolveEngine(ctx: RunContext, pass: Pass, seen: { snapshot: PinnedSnapshot; pods: ReadonlyMap<string, ObservedPod>; owned: readonly KubeObject[] }): Promise<{ engine: EngineBinding | undefined; credentials: ConditionDecision | undefined }> {
  const { snapshot, pods, owned } = seen;
  const adoption = { ref: pass.ref, previous: pass.run.status, isOver: pass.isOver, snapshot, owned };
  const known = ctx.deps.pools === undefined ? undefined : await bindEngine(ctx.deps, { ...adoption, held: true });
  const credentials = await readCredentials(ctx, pass, pods.has(known?.pod ?? buildChildNames(pass.ref.name).enginePod), snapshot);
  if (known?.from !== undefined || credentials?.status === "False") return { engine: known, credentials };
  return { engine: await bindEngine(ctx.deps, { ...adoption, held: false }), credentials };
}

/**
 * CredentialsReady: none once the Run is over; looked up live until the engine pod exists (afterwards the kubelet
 * holds what it needs), and once more when the status seen here does not carry the answer yet (a cache behind our
 * own write would drop the condition).
 */
async function readCredentials(ctx: RunContext, pass: Pass, engineExists: boolean, snapshot: PinnedSnapshot): Promise<ConditionDecision | undefined> {
  if (pass.isOver) return undefined;
  const kept = pass.run.status?.conditions?.find((c) => c.type === CONDITION.credentialsReady);
  if (!engineExists || kept === undefined) return checkCredentials(ctx.writer, pass.ref.namespace, snapshot.controller.credentials);
  return { type: kept.type, status: kept.status, reason: kept.reason, message: kept.message };
}

/**
 * Writes the Run's children as decided: the requeue delay they ask for, or, when the start snapshot turned out
 * not to be the Run's, the stopped Run's result. Any other failure is said on the Run and thrown (the loop retries).
 */
async function writeChildren(ctx: RunContext, pass: Pass, snapshot: PinnedSnapshot, decided: { decision: RunDecision; engine: EngineBinding | undefined }): Promise<{ requeue: number | undefined } | { stopped: ReconcileResult }> {
  const { ref } = pass;
  const { decision, engine } = decided;
  const desired = buildRunChildren({
    run: ref, snapshot, settings: ctx.deps.settings, sandboxes: decision.sandboxes, hostExec: decision.hostExec, lifecycle: decision.lifecycle,
    ...(decision.draining ? { draining: true } : {}), ...(decision.holdEngine ? { holdEngine: true } : {}),
    ...(engine?.from === "pool" ? { pool: engine.pod, pairedSandboxes: engine.paired === true } : {}),
  });
  const spare = listSparedChildren(engine, decision.lifecycle, decision.draining === true);
  // On the pass that writes the snapshot: a pod's prerequisites go out beside it, the rest once it is accepted.
  const pinned = snapshot.accepted?.then((refused) => {
    if (refused) throw new SnapshotRefused(refused);
  });
  try {
    return { requeue: await ctx.syncChildren(ref, desired, { live: decision.lifecycle === "active", ...(pinned ? { pinned } : {}), spare }) };
  } catch (err) {
    if (err instanceof SnapshotRefused) return { stopped: await stop(ctx, pass, err.blocked, desired.filter((o) => POD_PREREQUISITES.has(o.kind))) };
    // The snapshot's own write failed: nothing is pinned, so no status may say it is; the loop retries.
    if (snapshot.accepted !== undefined && await snapshot.accepted.then(() => false, () => true)) throw err;
    await reportChildrenFailure(ctx, pass, { snapshot, decision, engine, err });
    throw err;
  }
}

/**
 * Says on the Run why it is stuck (a Pod Security refusal, a quota) before the loop retries with backoff. The
 * server's text stays the message; the condition's reason says what kind of refusal it was.
 */
async function reportChildrenFailure(ctx: RunContext, pass: Pass, failure: { snapshot: PinnedSnapshot; decision: RunDecision; engine: EngineBinding | undefined; err: unknown }): Promise<void> {
  const { snapshot, decision, engine, err } = failure;
  const message = `writing the Run's children failed: ${(err as Error).message}`;
  const refused = { type: CONDITION.childrenFailure, status: "True" as const, reason: decideErrorReason(err), message };
  const failed = { ...decision, message, conditions: [...decision.conditions, refused] };
  ctx.deps.events?.record(referenceOf(pass.ref), { type: "Warning", reason: REASON.failedCreate, action: "Create", note: failed.message });
  await writeStatus(ctx, pass, buildRunStatus(basisOf(pass), { name: pass.ref.name, snapshot, decision: failed, engine })).catch(() => undefined);
}

/**
 * Whether the Run's NetworkPolicy, applied on an earlier pass (its condition says so), is gone: absent from
 * the cache and, asked live so that a cache still catching up is not taken for a deletion, from the server.
 */
async function isNetworkPolicyGone(ctx: RunContext, ref: RunRef, owned: readonly KubeObject[], previous: RunStatus | undefined): Promise<boolean> {
  if (owned.some((o) => o.kind === "NetworkPolicy")) return false;
  if (!isNetworkPolicyApplied(previous?.conditions?.find((c) => c.type === CONDITION.networkIsolated))) return false;
  return (await ctx.writer.read("networkPolicy", ref.namespace, buildChildNames(ref.name).networkPolicy)) === undefined;
}

/** Why a Run may not start yet under `onUnverified: refuse` (undefined: it may). */
function networkRefusal(ctx: RunContext, run: RunObject, plan: ReturnType<typeof computeSandboxPlan>, seen: { hasPods: boolean; enforcement: NetworkEnforcementStatus }): string | undefined {
  const started = seen.hasPods || TERMINAL_PHASES.includes(run.status?.phase ?? "Pending");
  return decideNetworkRefusal({ plan, started, enforcement: seen.enforcement, spec: computeEffectivePolicy(ctx.deps.policy())?.spec.networkEnforcement });
}

/**
 * Deletes what a stopped Run loses: its owned children of `kinds` (and `written`, what this pass wrote that the
 * cache may not hold yet), then the approval reader.
 */
async function deleteStopped(ctx: RunContext, ref: RunRef, kinds: ReadonlySet<string>, written: readonly KubeObject[] = []): Promise<void> {
  const owned = ctx.cache.listOwnedBy(ref.uid).filter((o) => kinds.has(o.kind) && !o.metadata.deletionTimestamp);
  const uncached = written.filter((w) => !owned.some((o) => o.kind === w.kind && o.metadata.name === w.metadata.name));
  for (const obj of [...owned, ...uncached]) await ctx.writer.delete(obj);
  await dropApprovalReader(ctx, ref);
}

/**
 * A Run that may not go on: its status says why. One that failed loses what may run or act for it, including
 * what this pass wrote and the cache may not hold yet (`written`).
 */
async function stop(ctx: RunContext, pass: Pass, blocked: Blocked, written: readonly KubeObject[] = []): Promise<ReconcileResult> {
  // A run that can no longer be resolved is over: nothing of it may keep running.
  if (blocked.phase === "Failed") await deleteStopped(ctx, pass.ref, STOPPED_KINDS, written);
  await writeStatus(ctx, pass, buildBlockedRunStatus(basisOf(pass), { phase: blocked.phase, reason: blocked.reason, message: blocked.message, snapshotSha256: blocked.sha256 }));
  return blocked.recheckMs !== undefined ? { requeueAfterMs: blocked.recheckMs } : {};
}

/**
 * A finished Run whose pinned snapshot can no longer be read (its ConfigMap deleted or replaced after it ended)
 * keeps its phase, reason and message: a terminal phase is never left. Nothing of it may run, so what a
 * finished Run loses is deleted again if anything brought it back; its TTL still applies.
 */
async function stayFinished(ctx: RunContext, ref: RunRef, ttl: number | undefined): Promise<ReconcileResult> {
  await deleteStopped(ctx, ref, FINISHED_KINDS);
  return ttl === undefined ? {} : { requeueAfterMs: Math.max(1, ttl - ctx.deps.nowMs()) };
}
