// The pool controller's part for sandbox pods (docs/controller.md, "Warm sandbox pods"): each engine pod the pool
// keeps gets the sandbox pods a Run bound to it would plan, after the pool's NetworkPolicy when one of them is
// `network = false`; a sandbox pod whose engine pod is gone, retired or ended is deleted at the version seen (one a
// Run claimed meanwhile is left to it), and one whose engine pod a Run adopted is left for that Run to take.
import { LABEL } from "../../api/constants.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { ANNOTATION } from "../../sandbox/names.ts";
import { POOL_STATE, type PoolAgent, type PoolTemplate } from "../../sandbox/pool-pods.ts";
import { buildPoolNetworkPolicy, buildPoolSandboxPod, listPoolSandboxPlans } from "../../sandbox/pool-sandbox-pods.ts";
import type { ClusterCache } from "../cluster-port.ts";
import type { ControllerContext } from "../controller-declaration.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import { isInPlace, type PodObject } from "../owned-children.ts";
import { isPoolSandboxPod } from "../warm/pool-pod-lookup.ts";
import { decidePoolSandboxPods, type ObservedPoolSandbox, type PairState } from "./pool-sandbox-decision.ts";

function observe(pod: PodObject): ObservedPoolSandbox {
  const a = pod.metadata.annotations ?? {};
  return { name: pod.metadata.name, pair: a[ANNOTATION.poolPair], specHash: a[ANNOTATION.specHash], deleting: pod.metadata.deletionTimestamp !== undefined };
}

/** An engine pod the pool no longer keeps, as its sandbox pods see it: a Run's that may still take them, or gone. */
function pairStateOf(engine: PodObject | undefined): PairState {
  if (engine === undefined || engine.metadata.deletionTimestamp !== undefined) return "gone";
  const ended = engine.status?.phase === "Succeeded" || engine.status?.phase === "Failed";
  return engine.metadata.labels?.[LABEL.poolState] === POOL_STATE.bound && !ended ? "bound" : "gone";
}

/** What the pool's sandbox pods are planned from, read from the cache: runtime classes, the engine pods they pair with, the NetworkPolicy. */
export interface PoolSandboxFacts {
  readonly runtimeClasses: ReadonlySet<string>;
  /** The engine pod each of the pool's sandbox pods names (`pool-pair`), as cached (undefined: gone). */
  readonly pairs: ReadonlyMap<string, PodObject | undefined>;
  /** The pool's NetworkPolicy as cached. */
  readonly networkPolicy: KubeObject | undefined;
}

/** Reads what the sandbox pods of the pool are planned from. `owned`: the Agent's objects in the cache. */
export function readPoolSandboxFacts(cache: ClusterCache, agent: PoolAgent, owned: readonly KubeObject[]): PoolSandboxFacts {
  const pairs = new Set(owned.filter(isPoolSandboxPod).flatMap((p) => { const pair = p.metadata.annotations?.[ANNOTATION.poolPair]; return pair === undefined ? [] : [pair]; }));
  return {
    runtimeClasses: new Set(cache.list("runtimeClass").map((rc) => rc.metadata.name)),
    pairs: new Map([...pairs].map((pair) => [pair, cache.get("pod", agent.namespace, pair) as PodObject | undefined])),
    networkPolicy: cache.get("networkPolicy", agent.namespace, buildPoolNetworkPolicy(agent).metadata.name),
  };
}

/** The writes for the pool's sandbox pods: deletes (at the version seen), the NetworkPolicy when it must change, creates. */
export interface PoolSandboxPlan {
  readonly delete: readonly PodObject[];
  /** The pool's NetworkPolicy, replaced whole at `resourceVersion` (none: in place, or not needed). */
  readonly networkPolicy?: { readonly desired: KubeObject; readonly resourceVersion: string | undefined } | undefined;
  readonly create: readonly KubeObject[];
}

/**
 * Keeps the sandbox pods of the engine pods in `kept` (unbound, current, not retired; their claims exist) and
 * deletes the pool's others but those of adopted engine pods; pure. The pool's NetworkPolicy goes before any
 * `network: none` pod it governs, and is kept exactly ours once it exists: NetworkPolicies add up, so a rule
 * someone added to it would let out an adopted pod the Run's own policy isolates. `owned`: the Agent's objects.
 */
export function planPoolSandboxes(at: { agent: PoolAgent; template: PoolTemplate | undefined; kept: readonly string[]; owned: readonly KubeObject[]; settings: PodSettings; facts: PoolSandboxFacts }): PoolSandboxPlan {
  const { agent, template, kept, owned, facts } = at;
  const hasRuntimeClass = (rc: string) => facts.runtimeClasses.has(rc);
  const built = new Map(template === undefined ? [] : kept.map((pod) => [pod, listPoolSandboxPlans(template, pod, hasRuntimeClass).map((plan) => buildPoolSandboxPod(template, pod, plan, at.settings))]));
  const pods = owned.filter(isPoolSandboxPod);
  const observed = pods.map(observe);
  const pairs = new Map(observed.filter((s) => s.pair !== undefined && !built.has(s.pair)).map((s) => [s.pair!, pairStateOf(facts.pairs.get(s.pair!))]));
  const desired = new Map([...built].map(([pod, list]) => [pod, list.map((p) => ({ name: p.metadata.name, specHash: p.metadata.annotations?.[ANNOTATION.specHash] ?? "" }))]));
  const plan = decidePoolSandboxPods({ desired, pairs, sandboxes: observed });
  const create = [...built.values()].flat().filter((p) => plan.create.includes(p.metadata.name));
  const needed = create.some((p) => p.metadata.labels?.[LABEL.network] !== undefined);
  const np = buildPoolNetworkPolicy(agent);
  const writeNp = (facts.networkPolicy !== undefined || needed) && !isInPlace(np, facts.networkPolicy);
  return {
    delete: plan.delete.map((name) => pods.find((p) => p.metadata.name === name)!),
    ...(writeNp ? { networkPolicy: { desired: np, resourceVersion: facts.networkPolicy?.metadata.resourceVersion } } : {}),
    create,
  };
}

/** Applies the sandbox pods' plan: deletes at the version seen (one a Run claimed meanwhile is left), the NetworkPolicy, then creates. */
export async function applyPoolSandboxPlan(ctx: ControllerContext, plan: PoolSandboxPlan): Promise<void> {
  await Promise.all(plan.delete.map((p) => ctx.writer.deleteAtVersion(p)));
  if (plan.networkPolicy) await ctx.writer.replace(plan.networkPolicy.desired, plan.networkPolicy.resourceVersion);
  // Never `create`, which would apply over a pod holding the name: what holds it (a Run's, say) is left as it is.
  await Promise.all(plan.create.map((p) => ctx.writer.createOrGet(p)));
}
