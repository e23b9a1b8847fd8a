// The pool controller (docs/controller.md, "Warm pools"): for each Agent a LeviathPolicy pool names, keeps `size`
// ready, unbound pool pods made from what a Run of that Agent would pin today, and retires the others. A pod's
// template comes from the same snapshot builder a Run's start does, so a Run's pinned snapshot gives the same pool
// hash exactly when a pool pod can serve it. A bound pod is its Run's: this controller never touches it again.
// One pass is `gatherPool` (every read, from the cache) → `planPool` (pure) → `applyPoolPlan` (the writes in a
// fixed order: retire, collect what a stopped pass left (pool-leftovers.ts), create, then the sandbox pods:
// pool-sandboxes.ts).
import { AgentSpecSchema } from "../../api/agent.ts";
import { buildAgentKey } from "../../api/common.ts";
import type { Pool, PoolStatus } from "../../api/pools.ts";
import { RunSpecSchema } from "../../api/run.ts";
import { decideRuntimeCeilings } from "../../policy/ceilings.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { computeHash } from "../../sandbox/hash.ts";
import { buildPoolNames, buildPoolPod, buildPoolPodPrerequisites, buildPoolTemplate, computePoolHash, listPoolObjectNames, type PoolAgent, type PoolTemplate } from "../../sandbox/pool-pods.ts";
import { buildRunSnapshot } from "../../sandbox/run-snapshot.ts";
import { listPoolSandboxPlans } from "../../sandbox/pool-sandbox-pods.ts";
import type { ClusterCache, ReconcileResult } from "../cluster-port.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import type { ControllerContext, Reconcile } from "../controller-declaration.ts";
import { parseObjectKey } from "../object-key.ts";
import { computeEffectivePolicy, type PolicyState } from "../leviath-policy/policy-state.ts";
import type { PodObject } from "../owned-children.ts";
import { isPoolEnginePod, listPoolPods, observePoolPod, type ObservedPoolPod } from "../warm/pool-pod-lookup.ts";
import { decidePoolPods } from "./pool-decision.ts";
import { decideRefill } from "./pool-refill.ts";
import type { PoolLedger } from "./pool-ledger.ts";
import { decidePoolLeftovers, POOL_LEFTOVER_GRACE_MS, readLivePoolPods } from "./pool-leftovers.ts";
import { applyPoolSandboxPlan, planPoolSandboxes, readPoolSandboxFacts, type PoolSandboxFacts, type PoolSandboxPlan } from "./pool-sandboxes.ts";
import { computePoolStatuses } from "./pool-status.ts";

/** A pool still filling or a pod still starting is looked at again this often (pod events bring it back sooner). */
const POOL_RECHECK_MS = 5_000;

/** What one pool pass reads: the Agent, the policy and settings in force, the pass's time, and the Agent's objects. */
export interface PoolObservation {
  readonly agentObj: KubeObject & { spec?: unknown };
  readonly agent: PoolAgent;
  readonly policy: PolicyState;
  readonly settings: PodSettings;
  readonly nowMs: number;
  /** The Agent's objects in the cache (pool pods, their identity, claims, sandbox pods, the NetworkPolicy). */
  readonly owned: readonly KubeObject[];
  /** What the pool's sandbox pods need to be planned and kept: runtime classes, paired engine pods, the NetworkPolicy. */
  readonly sandboxes: PoolSandboxFacts;
  /** When a Run last adopted one of this pool's pods (undefined: not since the controller started). */
  readonly lastAdoptionMs?: number | undefined;
  /** The pool pods the cache holds under any owner, among those the Agent's identities and claims were made for. */
  readonly livePoolPods: ReadonlySet<string>;
  /** How long an identity or claim of the pool may be without its pod before it is collected. */
  readonly leftoverGraceMs: number;
  /**
   * Engine pods this controller created that its cache does not show yet: counted as starting, so a pass run before
   * the cache catches up with the last one's writes does not create the pool's pods a second time.
   */
  readonly unseenCreates?: readonly ObservedPoolPod[] | undefined;
}

/** How long a pool pod this controller created may stay out of its cache before it no longer counts (a lost watch event). */
export const UNSEEN_CREATE_EXPIRY_MS = 30_000;

/**
 * The pool pods each pool's passes created, until the cache shows them (the expectations of controller-runtime's
 * ReplicaSet controller, by name). In memory: a restarted controller starts from the cache, which is then current.
 */
export class PoolCreations {
  readonly #byPool = new Map<string, Map<string, ObservedPoolPod>>();

  /** Records a created engine pod of the pool `key`. */
  created(key: string, pod: ObservedPoolPod): void {
    const pool = this.#byPool.get(key) ?? new Map<string, ObservedPoolPod>();
    pool.set(pod.name, pod);
    this.#byPool.set(key, pool);
  }

  /** The pool's created pods the cache does not show yet (`isCached`: under any owner), forgetting the seen and the expired. */
  unseen(key: string, isCached: (name: string) => boolean, nowMs: number): ObservedPoolPod[] {
    const pool = this.#byPool.get(key);
    if (pool === undefined) return [];
    for (const [name, pod] of pool) if (isCached(name) || nowMs - pod.createdMs > UNSEEN_CREATE_EXPIRY_MS) pool.delete(name);
    if (pool.size === 0) this.#byPool.delete(key);
    return [...pool.values()];
  }
}

/** The writes of one pool pass, in the applier's order. */
export interface PoolPlan {
  /** Unbound pool pods to retire (each deleted at the version seen, then its identity and claim). */
  readonly retire: readonly { readonly pod: PodObject; readonly objects: readonly KubeObject[] }[];
  /** Identities and claims of pool pods that exist nowhere (a pass stopped before the pod), each deleted at the version seen. */
  readonly collect: readonly KubeObject[];
  /** New pool pods, each after its identity and claim. */
  readonly create: readonly { readonly prerequisites: readonly KubeObject[]; readonly pod: KubeObject }[];
  readonly sandboxes: PoolSandboxPlan;
  readonly requeueAfterMs?: number | undefined;
  /** The pool has its size of ready pods (its adoptions are refilled). */
  readonly full: boolean;
}

/** The template a Run of this Agent would pin today (undefined: the Agent cannot run, so its pool keeps nothing). */
function computeTemplate(obs: PoolObservation, pool: Pool): PoolTemplate | undefined {
  const { agentObj, agent, settings } = obs;
  const spec = AgentSpecSchema.safeParse(agentObj.spec ?? {});
  const policy = computeEffectivePolicy(obs.policy);
  // Never a pod of an image or runtime kind the policy's ceilings refuse: a Run of this Agent would not start either.
  if (!spec.success || policy === undefined || decideRuntimeCeilings(policy.spec, spec.data, settings.defaultRuntimeImage) !== undefined) return undefined;
  const snapshot = buildRunSnapshot({
    agent: { name: agent.name, namespace: agent.namespace, generation: agentObj.metadata.generation ?? 0, spec: spec.data, written: (agentObj.spec ?? {}) as Record<string, unknown> },
    policy,
    run: RunSpecSchema.parse({ agentRef: { name: agent.name } }),
    ...(settings.defaultRuntimeImage ? { defaultRuntimeImage: settings.defaultRuntimeImage } : {}),
  });
  return snapshot.ok ? buildPoolTemplate(agent, snapshot.value, pool) : undefined;
}

/** New ids for pool pods: derived from the Agent, the time and a counter, skipping names the cache holds. */
function pickIds(agent: PoolAgent, count: number, taken: ReadonlySet<string>, nowMs: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) {
    const id = computeHash({ agent: agent.uid, nowMs, i }).slice(0, 10);
    if (!taken.has(buildPoolNames(agent.name, id).pod)) ids.push(id);
  }
  return ids;
}

/** The pool declared for this Agent: its size (0 when none, or when the Agent cannot run), template and hash. */
function desirePool(obs: PoolObservation): { size: number; template?: PoolTemplate; hash: string } {
  const pool = computeEffectivePolicy(obs.policy)?.spec.pools.find((p) => p.agent === buildAgentKey(obs.agent.namespace, obs.agent.name));
  const template = pool === undefined ? undefined : computeTemplate(obs, pool);
  if (pool === undefined || template === undefined) return { size: 0, hash: "" };
  return { size: pool.size, template, hash: computePoolHash(template, obs.settings) };
}

/** Reads one pool pass for the Agent of `key` (`namespace/name`), from the cache; undefined when there is no such Agent. */
export function gatherPool(ctx: ControllerContext, key: string, creations?: PoolCreations): PoolObservation | undefined {
  const { namespace, name } = parseObjectKey(key);
  const agentObj = ctx.cache.get("agent", namespace, name) as (KubeObject & { spec?: unknown }) | undefined;
  const uid = agentObj?.metadata.uid;
  if (agentObj === undefined || uid === undefined || namespace === undefined) return undefined;
  const agent: PoolAgent = { namespace, name, uid };
  const owned = ctx.cache.listOwnedBy(uid);
  const lastAdoptionMs = ctx.pools?.lastAdoption(buildAgentKey(namespace, name));
  const nowMs = ctx.nowMs();
  return {
    agentObj, agent, policy: ctx.policy(), settings: ctx.settings, nowMs, owned, sandboxes: readPoolSandboxFacts(ctx.cache, agent, owned), lastAdoptionMs,
    livePoolPods: readLivePoolPods(ctx.cache, namespace, owned), leftoverGraceMs: ctx.poolLeftoverGraceMs ?? POOL_LEFTOVER_GRACE_MS,
    // Seen under any owner: a Run that adopted it a moment later holds it, and it no longer counts for the pool.
    unseenCreates: creations?.unseen(key, (pod) => ctx.cache.get("pod", namespace, pod) !== undefined, nowMs),
  };
}

/**
 * The pool's writes this pass, pure: retire the failed, stale and surplus unbound pods (a pod written since, a Run's
 * claim, is left by the applier's versioned delete), create what is missing, and keep each kept pod's sandbox pods.
 */
export function planPool(obs: PoolObservation): PoolPlan {
  const { agent, owned } = obs;
  const { size, template, hash } = desirePool(obs);
  const pods = owned.filter(isPoolEnginePod);
  const observed = pods.map(observePoolPod);
  const unseen = obs.unseenCreates ?? [];
  const decided = decidePoolPods(size, hash, [...observed, ...unseen]);
  // A pod the cache does not show yet is not deleted this pass (no version to delete it at): the next one decides.
  const plan = { ...decided, delete: decided.delete.filter((name) => pods.some((p) => p.metadata.name === name)) };
  const retire = plan.delete.map((name) => {
    const names = new Set(listPoolObjectNames(name));
    return { pod: pods.find((p) => p.metadata.name === name)!, objects: owned.filter((o) => o.kind !== "Pod" && names.has(o.metadata.name)) };
  });
  // Refilled once the last adoption's hand-over is past, a few pods at a time (pool-refill.ts).
  const refill = decideRefill({ missing: plan.create, starting: plan.starting, sinceAdoptionMs: obs.lastAdoptionMs === undefined ? undefined : obs.nowMs - obs.lastAdoptionMs });
  const ids = template !== undefined && refill.create > 0 ? pickIds(agent, refill.create, new Set([...pods.map((p) => p.metadata.name), ...unseen.map((p) => p.name)]), obs.nowMs) : [];
  const create = template === undefined ? [] : ids.map((id) => {
    // Its sandbox pods, as pool-sandboxes.ts makes them: its sidecar may exec into them (and opens its shell channels) before any binding.
    const sandboxPods = listPoolSandboxPlans(template, buildPoolNames(agent.name, id).pod, (rc) => obs.sandboxes.runtimeClasses.has(rc)).map((p) => p.pod);
    return { prerequisites: buildPoolPodPrerequisites(template.agent, id, sandboxPods), pod: buildPoolPod(template, id, obs.settings, sandboxPods) };
  });
  // Each engine pod the pool keeps (and each made now: its claim exists) gets its sandbox pods.
  const kept = [...[...observed, ...unseen].filter((p) => !plan.delete.includes(p.name) && !p.deleting && p.hash === hash && (p.state === "ready" || p.state === "starting")).map((p) => p.name), ...ids.map((id) => buildPoolNames(agent.name, id).pod)];
  const sandboxes = planPoolSandboxes({ agent, template, kept, owned, settings: obs.settings, facts: obs.sandboxes });
  const leftovers = decidePoolLeftovers({ owned, livePods: obs.livePoolPods, nowMs: obs.nowMs, graceMs: obs.leftoverGraceMs });
  const filling = plan.create > 0 || plan.starting > 0 || plan.delete.length > 0;
  const requeue = [filling ? POOL_RECHECK_MS : undefined, refill.retryAfterMs, leftovers.recheckMs].filter((n): n is number => n !== undefined);
  return { retire, collect: leftovers.collect, create, sandboxes, full: size > 0 && plan.ready >= size, ...(requeue.length > 0 ? { requeueAfterMs: Math.min(...requeue) } : {}) };
}

/**
 * Applies a pool plan in order: each retired pod deleted at the version the cache saw, then its identity and claim
 * (owned by the Agent while unbound; a pod written since, a Run claimed it a moment ago, is left with them: the next
 * pass sees it bound, and a bound pod is its Run's); new pods, each after its identity and its claim, made by this
 * request (a pod naming a missing ServiceAccount is refused); then the sandbox pods (pool-sandboxes.ts). Between
 * retiring and creating, what a pass that stopped before its pod left (pool-leftovers.ts) is deleted at the version
 * the cache saw (one written since is left to the next pass).
 */
export async function applyPoolPlan(ctx: ControllerContext, plan: PoolPlan, onCreated: (pod: KubeObject) => void = () => {}): Promise<ReconcileResult> {
  await Promise.all(plan.retire.map(async ({ pod, objects }) => {
    if (!(await ctx.writer.deleteAtVersion(pod))) return;
    await Promise.all(objects.map((o) => ctx.writer.delete(o)));
  }));
  await Promise.all(plan.collect.map((o) => ctx.writer.deleteAtVersion(o)));
  // A pool pod's claim must be made by this request: one found under its name (planted, labels and owner included)
  // is never mounted, and no pod is made for that id (a later pass picks new ids).
  await Promise.all(plan.create.map(async ({ prerequisites, pod }) => {
    for (const obj of prerequisites) {
      if (obj.kind !== "PersistentVolumeClaim") {
        await ctx.writer.create(obj);
        continue;
      }
      if (!(await ctx.writer.createOrFind(obj)).created) throw new Error(`PersistentVolumeClaim '${obj.metadata.name}' exists and was not made by the operator for this pool pod`);
    }
    await ctx.writer.create(pod);
    onCreated(pod);
  }));
  await applyPoolSandboxPlan(ctx, plan.sandboxes);
  return plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : {};
}

/** The pool reconciler: one key per Agent (`namespace/name`). */
export function createPoolReconciler(ctx: ControllerContext): Reconcile {
  const creations = new PoolCreations();
  return async (key: string): Promise<ReconcileResult> => {
    const obs = gatherPool(ctx, key, creations);
    if (obs === undefined) return {};
    const plan = planPool(obs);
    if (plan.full) ctx.pools?.full(buildAgentKey(obs.agent.namespace, obs.agent.name), obs.nowMs);
    return applyPoolPlan(ctx, plan, (pod) => creations.created(key, { ...observePoolPod(pod as PodObject), state: "starting", createdMs: obs.nowMs }));
  };
}

/**
 * The LeviathPolicy status fields of the pools in force (none without pools), from the cache and, with warm pools
 * on, the ledger of what they served (which also gets the pod counts for the metrics).
 */
export function buildPoolStatusFields(cache: ClusterCache, state: PolicyState, ledger?: PoolLedger): { pools?: PoolStatus[]; poolsDisplay?: string } {
  const { pools, display } = readPoolStatuses(cache, computeEffectivePolicy(state)?.spec.pools ?? [], ledger);
  if (ledger) ledger.pods({ ready: pools.reduce((n, p) => n + p.ready, 0), starting: pools.reduce((n, p) => n + p.starting, 0) });
  return display === undefined ? {} : { pools, poolsDisplay: display };
}

/** The pools' status from the cache: each pool's unbound pods in the Agent's namespace, and what it served. */
function readPoolStatuses(cache: ClusterCache, pools: readonly Pool[], ledger: PoolLedger | undefined): ReturnType<typeof computePoolStatuses> {
  return computePoolStatuses(pools, (pool) => listPoolPods(cache, pool.agent), (pool) => ledger?.counts(pool.agent) ?? { adoptions: 0, misses: 0 });
}
