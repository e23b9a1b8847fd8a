// The pool controller (docs/controller.md, "Warm pools"): for each Agent a LeviathPolicy pool names, keeps `size`
// ready, unbound pool pods made from what a Run of that Agent would pin today, and retires the others. A pod's
// template comes from the same snapshot builder a Run's start does, so a Run's pinned snapshot gives the same pool
// hash exactly when a pool pod can serve it. A bound pod is its Run's: this controller never touches it again.
import { AgentSpecSchema } from "../../api/agent.ts";
import { buildAgentKey } from "../../api/common.ts";
import type { Pool, PoolStatus } from "../../api/pools.ts";
import { RunSpecSchema } from "../../api/run.ts";
import { decideRuntimeCeilings } from "../../policy/ceilings.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { computeHash } from "../../sandbox/hash.ts";
import { buildPoolNames, buildPoolPod, buildPoolPodPrerequisites, buildPoolTemplate, computePoolHash, listPoolObjectNames, type PoolAgent, type PoolTemplate } from "../../sandbox/pool-pods.ts";
import { buildRunSnapshot } from "../../sandbox/run-snapshot.ts";
import type { ClusterCache, ReconcileResult } from "../cluster-port.ts";
import type { ControllerContext, Reconcile } from "../controller-declaration.ts";
import { parseObjectKey } from "../object-key.ts";
import { computeEffectivePolicy, type PolicyState } from "../policy/policy-state.ts";
import type { PodObject } from "../owned-children.ts";
import { isPoolEnginePod, listPoolPods, observePoolPod } from "../warm/pool-pod-lookup.ts";
import { decidePoolPods } from "./pool-decision.ts";
import type { PoolLedger } from "./pool-ledger.ts";
import { syncPoolSandboxes } from "./pool-sandboxes.ts";
import { computePoolStatuses } from "./pool-status.ts";

/** A pool still filling or a pod still starting is looked at again this often (pod events bring it back sooner). */
const POOL_RECHECK_MS = 5_000;

/** The template a Run of this Agent would pin today (undefined: the Agent cannot run, so its pool keeps nothing). */
function computeTemplate(ctx: ControllerContext, agentObj: KubeObject & { spec?: unknown }, agent: PoolAgent, pool: Pool): PoolTemplate | undefined {
  const spec = AgentSpecSchema.safeParse(agentObj.spec ?? {});
  const policy = computeEffectivePolicy(ctx.policy());
  // Never a pod of an image or runtime kind the policy's ceilings refuse: a Run of this Agent would not start either.
  if (!spec.success || policy === undefined || decideRuntimeCeilings(policy.spec, spec.data, ctx.settings.defaultRuntimeImage) !== undefined) return undefined;
  const snapshot = buildRunSnapshot({
    agent: { name: agent.name, namespace: agent.namespace, generation: agentObj.metadata.generation ?? 0, spec: spec.data, written: (agentObj.spec ?? {}) as Record<string, unknown> },
    policy,
    run: RunSpecSchema.parse({ agentRef: { name: agent.name } }),
    ...(ctx.settings.defaultRuntimeImage ? { defaultRuntimeImage: ctx.settings.defaultRuntimeImage } : {}),
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
function desirePool(ctx: ControllerContext, agentObj: KubeObject & { spec?: unknown }, agent: PoolAgent): { size: number; template?: PoolTemplate; hash: string } {
  const pool = computeEffectivePolicy(ctx.policy())?.spec.pools.find((p) => p.agent === buildAgentKey(agent.namespace, agent.name));
  const template = pool === undefined ? undefined : computeTemplate(ctx, agentObj, agent, pool);
  if (pool === undefined || template === undefined) return { size: 0, hash: "" };
  return { size: pool.size, template, hash: computePoolHash(template, ctx.settings) };
}

/** Creates `ids`' pool pods, each after its identity and claim (a pod naming a missing ServiceAccount is refused). */
async function createPoolPods(ctx: ControllerContext, template: PoolTemplate, ids: readonly string[]): Promise<void> {
  await Promise.all(ids.map(async (id) => {
    for (const obj of buildPoolPodPrerequisites(template.agent, id)) await ctx.writer.create(obj);
    await ctx.writer.create(buildPoolPod(template, id, ctx.settings));
  }));
}

/**
 * Deletes a retired pool pod at the version the cache saw, then its identity and claim (owned by the Agent while
 * unbound). A pod written since (a Run claimed it a moment ago) is left, with its claim and identity: the next pass
 * sees it bound, and a bound pod is its Run's.
 */
async function retirePoolPod(ctx: ControllerContext, pod: PodObject, owned: readonly KubeObject[]): Promise<void> {
  if (!(await ctx.writer.deleteAtVersion(pod))) return;
  const names = new Set(listPoolObjectNames(pod.metadata.name));
  await Promise.all(owned.filter((o) => o.kind !== "Pod" && names.has(o.metadata.name)).map((o) => ctx.writer.delete(o)));
}

/** The pool reconciler: one key per Agent (`namespace/name`). */
export function createPoolReconciler(ctx: ControllerContext): Reconcile {
  const { cache } = ctx;
  return async (key: string): Promise<ReconcileResult> => {
    const { namespace, name } = parseObjectKey(key);
    const agentObj = cache.get("agent", namespace, name) as (KubeObject & { spec?: unknown }) | undefined;
    const uid = agentObj?.metadata.uid;
    if (agentObj === undefined || uid === undefined || namespace === undefined) return {};
    const agent: PoolAgent = { namespace, name, uid };
    const { size, template, hash } = desirePool(ctx, agentObj, agent);
    const owned = cache.listOwnedBy(uid);
    const pods = owned.filter(isPoolEnginePod);
    const observed = pods.map(observePoolPod);
    const plan = decidePoolPods(size, hash, observed);
    await Promise.all(plan.delete.map((name) => retirePoolPod(ctx, pods.find((p) => p.metadata.name === name)!, owned)));
    const created = template !== undefined && plan.create > 0 ? pickIds(agent, plan.create, new Set(pods.map((p) => p.metadata.name)), ctx.nowMs()) : [];
    if (template !== undefined && created.length > 0) await createPoolPods(ctx, template, created);
    // Each engine pod the pool keeps (and each made now: its claim exists) gets its sandbox pods.
    const kept = [...observed.filter((p) => !plan.delete.includes(p.name) && !p.deleting && p.hash === hash && (p.state === "ready" || p.state === "starting")).map((p) => p.name), ...created.map((id) => buildPoolNames(name, id).pod)];
    await syncPoolSandboxes(ctx, { agent, template, kept, owned });
    const filling = plan.create > 0 || plan.starting > 0 || plan.delete.length > 0;
    return filling ? { requeueAfterMs: POOL_RECHECK_MS } : {};
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
