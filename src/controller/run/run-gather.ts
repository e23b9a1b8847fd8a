// The first part of a Run pass (src/controller/README.md, "How a Run pass reads"): every read the pass makes, from
// the informer caches and live from the API server, into one observation. Nothing here writes or decides what the
// Run becomes; what it reads next depends only on what pinning resolves (`decidePin`, pure), so a Run that cannot
// go on is not read further.
import { RunSpecSchema, type RunSpec } from "../../api/run.ts";
import { formatApiTime } from "../../api/time.ts";
import { CONDITION, TERMINAL_PHASES, type NetworkEnforcementStatus, type RunStatus } from "../../api/status.ts";
import type { EventSink } from "../../kube/event-recorder.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildChildNames, type RunRef } from "../../sandbox/names.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { computeSandboxPlan } from "../../sandbox/sandbox-plan.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { parseObjectKey } from "../object-key.ts";
import type { PolicyState } from "../leviath-policy/policy-state.ts";
import type { PoolLedger } from "../pool/pool-ledger.ts";
import { isPoolSandboxPod, listPoolPods } from "../warm/pool-pod-lookup.ts";
import { ENFORCEMENT_UNCHECKED, isNetworkPolicyApplied } from "./network-condition.ts";
import { coldBinding, findBinding, type AdoptionFacts } from "./run-adoption.ts";
import type { Blocked } from "./run-blocked.ts";
import { computeTtlExpiryMs } from "./run-completion.ts";
import { readCredentialSecrets } from "./run-credentials.ts";
import { decidePin, gatherPinFacts, type PinFacts } from "./run-pinning.ts";
import { readResumedSnapshot } from "./run-resume.ts";
import { overlayControllerFields } from "./run-status.ts";
import type { ApprovalNotifier } from "../approval/approval-webhook.ts";
import { buildAgentKey } from "../../api/common.ts";

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
  /** Told every Run seen, to notify its pending prompts besides the Event (the approval webhook; absent: none). */
  approvalNotifier?: Pick<ApprovalNotifier, "notePending"> | undefined;
}

export type RunObject = KubeObject & { spec?: unknown; status?: RunStatus; metadata: { uid?: string; generation?: number; deletionTimestamp?: unknown } };
type ConfigMapObject = KubeObject & { data?: Record<string, string> };

/**
 * The status this controller last wrote for each Run, with the resourceVersion of the Run it was computed from.
 * A pass whose cached Run is still at that version has not seen the write: its previous status is the written
 * one. A stale previous would undo a one-time transition (NetworkPolicyRestored, a restore time) and the
 * same-status check would then skip the correction for good. An entry goes once the cache has moved past it.
 */
export type WrittenStatuses = Map<string, { fromRv: string | undefined; status: RunStatus }>;

/**
 * What the applier learned from a conditional write of this pass, for the plan made again with it (run-apply.ts):
 * the start snapshot's answer (with what was written before it was refused), the pool pod claimed or every one
 * lost, a resumed snapshot whose name something else holds.
 */
export interface RunAnswers {
  readonly pin?: true | { readonly refused: Blocked; readonly written: readonly KubeObject[] } | undefined;
  readonly claim?: { readonly pod: string } | { readonly lost: readonly string[] } | undefined;
  readonly resumeConflict?: boolean | undefined;
}

/** What the pass read once it has a snapshot to go on with: the Run's children, the cluster around it, and live answers. */
export interface RunWorld {
  /** The pods and other children the cache shows the Run controlling. */
  readonly owned: readonly KubeObject[];
  readonly networkEnforcement: NetworkEnforcementStatus;
  /** The Run namespace's labels (undefined: the namespace is not in the cache). */
  readonly namespaceLabels: Readonly<Record<string, string>> | undefined;
  /** Of the runtime classes the Run's sandboxes name, those that exist. */
  readonly runtimeClasses: ReadonlySet<string>;
  /** Asked live when the cache lacks the NetworkPolicy applied on an earlier pass: whether the server holds it. */
  readonly networkPolicyFound?: boolean | undefined;
  /** The credential Secrets' metadata, in order, when looked up live this pass. */
  readonly credentialSecrets?: readonly (KubeObject | undefined)[] | undefined;
  /** The resumed snapshot `status.resume.snapshot` names, as read. */
  readonly resumedSnapshot?: ConfigMapObject | undefined;
  /** With warm pools on and no binding decided yet: the Agent's uid and its pool's pods. */
  readonly adoption?: AdoptionFacts | undefined;
  /** With warm pools on, while the Run may take them: the pool sandbox pods of its namespace. */
  readonly poolSandboxPods: readonly KubeObject[];
}

/** One pass's observation of one Run: everything `planRun` decides from. */
export interface RunPassObservation {
  /** The Run as cached, with this controller's last status write laid over it. */
  readonly run: RunObject;
  readonly ref: RunRef;
  readonly generation: number;
  readonly nowMs: number;
  readonly nowIso: string;
  /** The Run was already in a terminal phase when the pass began. */
  readonly isOver: boolean;
  readonly spec: { readonly ok: true; readonly value: RunSpec } | { readonly ok: false; readonly issue: { path: PropertyKey[]; message: string } | undefined };
  readonly policy: PolicyState;
  readonly settings: PodSettings;
  readonly warmPools: boolean;
  /** The cached children the Run controls (what a stopped Run loses is deleted from these). */
  readonly owned: readonly KubeObject[];
  /** The approval controller's reader Role and binding for the Run, as cached (owned by the Run). */
  readonly approvalReader: readonly KubeObject[];
  /** What pinning read (absent: the spec is invalid, or the Run's TTL has passed). */
  readonly pin?: PinFacts | undefined;
  /** What the pass read once it had a snapshot (absent: it has none to go on with). */
  readonly world?: RunWorld | undefined;
  readonly answers: RunAnswers;
}

/** What the gatherer reads with. */
export interface GatherContext {
  readonly deps: RunReconcilerDeps;
  readonly written: WrittenStatuses;
}

/** The cached Run, with the status this controller last wrote where the cache has not caught up with it. */
function withOwnWrite(written: WrittenStatuses, key: string, cached: RunObject | undefined): RunObject | undefined {
  const own = written.get(key);
  if (own === undefined) return cached;
  if (cached === undefined || own.fromRv !== cached.metadata.resourceVersion) {
    written.delete(key);
    return cached;
  }
  return { ...cached, status: overlayControllerFields(cached.status, own.status) };
}

/** The approval controller's reader Role and binding of the Run (owned by it without being its controller). */
function readApprovalReader(cache: ClusterCache, ref: RunRef): KubeObject[] {
  const name = buildChildNames(ref.name).approvalReader;
  return (["role", "roleBinding"] as const).map((kind) => cache.get(kind, ref.namespace, name))
    .filter((o): o is KubeObject => o !== undefined && !o.metadata.deletionTimestamp && (o.metadata.ownerReferences?.some((r) => r.uid === ref.uid) ?? false));
}

/**
 * Gathers one pass over the Run of `key`: undefined when there is nothing to reconcile (no such Run, being deleted,
 * no uid yet).
 */
export async function gatherRun(ctx: GatherContext, key: string): Promise<RunPassObservation | undefined> {
  const { deps } = ctx;
  const { namespace, name } = parseObjectKey(key);
  if (namespace === undefined) return undefined;
  const run = withOwnWrite(ctx.written, key, deps.cache.get("run", namespace, name) as RunObject | undefined);
  if (!run || run.metadata.deletionTimestamp || !run.metadata.uid) return undefined;
  const ref: RunRef = { name, namespace, uid: run.metadata.uid };
  const nowMs = deps.nowMs();
  const parsed = RunSpecSchema.safeParse(structuredClone(run.spec ?? {}));
  const obs: RunPassObservation = {
    run, ref, generation: run.metadata.generation ?? 0, nowMs, nowIso: formatApiTime(nowMs),
    isOver: run.status?.phase !== undefined && TERMINAL_PHASES.includes(run.status.phase),
    spec: parsed.success ? { ok: true, value: parsed.data } : { ok: false, issue: parsed.error.issues[0] },
    policy: deps.policy(), settings: deps.settings, warmPools: deps.pools !== undefined,
    owned: deps.cache.listOwnedBy(ref.uid), approvalReader: readApprovalReader(deps.cache, ref), answers: {},
  };
  if (!obs.spec.ok) return obs;
  const ttl = computeTtlExpiryMs(obs.spec.value, run.status);
  if (obs.isOver && ttl !== undefined && nowMs >= ttl) return obs;
  const pin = await gatherPinFacts({ ...deps, policy: () => obs.policy }, ref, obs.spec.value, run.status);
  const decided = decidePin({ ref, spec: obs.spec.value, status: run.status, policy: obs.policy, settings: obs.settings }, pin);
  if (decided.kind === "blocked") return { ...obs, pin };
  return { ...obs, pin, world: await gatherWorld(deps, obs, decided.snapshot) };
}

/** The reads of a pass that has a snapshot to go on with. */
async function gatherWorld(deps: RunReconcilerDeps, obs: RunPassObservation, snapshot: RunSnapshot): Promise<RunWorld> {
  const { ref, run, owned } = obs;
  const { cache, writer } = deps;
  const rcs = new Set(computeSandboxPlan(ref.name, snapshot.runPolicy).flatMap((p) => (p.runtimeClassName === undefined ? [] : [p.runtimeClassName])));
  const ns = cache.get("namespace", undefined, ref.namespace);
  const found = obs.warmPools ? findBinding({ ref, previous: run.status, isOver: obs.isOver, snapshot, owned }) : undefined;
  const [networkPolicyFound, credentialSecrets, resumedSnapshot] = await Promise.all([
    readNetworkPolicy(writer, obs),
    readCredentials(writer, obs, snapshot, obs.warmPools ? (found ?? coldBinding(ref, snapshot, undefined)).pod : undefined),
    readResumedSnapshot(deps, ref, run.status),
  ]);
  const mayTake = obs.warmPools && !obs.isOver && (found === undefined || found.from === "pool");
  return {
    owned,
    networkEnforcement: deps.networkEnforcement?.() ?? ENFORCEMENT_UNCHECKED,
    namespaceLabels: ns ? ns.metadata.labels ?? {} : undefined,
    runtimeClasses: new Set([...rcs].filter((rc) => cache.get("runtimeClass", undefined, rc) !== undefined)),
    networkPolicyFound, credentialSecrets, resumedSnapshot,
    adoption: obs.warmPools && !obs.isOver && found === undefined ? readAdoption(cache, ref, snapshot) : undefined,
    poolSandboxPods: mayTake ? cache.list("pod", ref.namespace).filter(isPoolSandboxPod) : [],
  };
}

/**
 * Whether the Run's NetworkPolicy, applied on an earlier pass (its condition says so) and absent from the cache, is
 * on the server: asked live so that a cache still catching up is not taken for a deletion (undefined: not asked).
 */
async function readNetworkPolicy(writer: ClusterWriter, obs: RunPassObservation): Promise<boolean | undefined> {
  if (obs.owned.some((o) => o.kind === "NetworkPolicy")) return undefined;
  if (!isNetworkPolicyApplied(obs.run.status?.conditions?.find((c) => c.type === CONDITION.networkIsolated))) return undefined;
  return (await writer.read("networkPolicy", obs.ref.namespace, buildChildNames(obs.ref.name).networkPolicy)) !== undefined;
}

/**
 * The credential Secrets' metadata: none once the Run is over; looked up live until the engine pod (`enginePod`,
 * with warm pools on the one bound so far) exists (afterwards the kubelet holds what it needs), and once more when
 * the status seen here does not carry the answer yet (a cache behind our own write would drop the condition).
 */
async function readCredentials(writer: ClusterWriter, obs: RunPassObservation, snapshot: RunSnapshot, enginePod: string | undefined): Promise<(KubeObject | undefined)[] | undefined> {
  const credentials = snapshot.controller.credentials;
  if (obs.isOver || credentials.length === 0) return undefined;
  const kept = obs.run.status?.conditions?.some((c) => c.type === CONDITION.credentialsReady) ?? false;
  const engineExists = obs.owned.some((o) => o.kind === "Pod" && o.metadata.name === (enginePod ?? buildChildNames(obs.ref.name).enginePod));
  if (engineExists && kept) return undefined;
  return readCredentialSecrets(writer, obs.ref.namespace, credentials);
}

/** What adoption looks up in the cache: the Agent's uid, and the pods of its pool. */
function readAdoption(cache: ClusterCache, ref: RunRef, snapshot: RunSnapshot): AdoptionFacts {
  const agent = snapshot.controller.agent.name;
  return { agentUid: cache.get("agent", ref.namespace, agent)?.metadata.uid, pods: listPoolPods(cache, buildAgentKey(ref.namespace, agent)) };
}
