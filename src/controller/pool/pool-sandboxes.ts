// The pool controller's part for sandbox pods (docs/controller.md, "Warm sandbox pods"): each engine pod the pool
// keeps gets the sandbox pods a Run bound to it would plan, after the pool's NetworkPolicy when one of them is
// `network = false`; a sandbox pod whose engine pod is gone, retired or ended is deleted at the version seen (one a
// Run claimed meanwhile is left to it), and one whose engine pod a Run adopted is left for that Run to take.
import { LABEL } from "../../api/constants.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { ANNOTATION } from "../../sandbox/names.ts";
import { POOL_STATE, type PoolAgent, type PoolTemplate } from "../../sandbox/pool-pods.ts";
import { buildPoolNetworkPolicy, buildPoolSandboxPod, listPoolSandboxPlans } from "../../sandbox/pool-sandbox-pods.ts";
import type { ControllerContext } from "../controller-declaration.ts";
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

/**
 * The pool's NetworkPolicy, before any `network: none` pod it governs (`needed`), and exactly ours once it exists:
 * NetworkPolicies add up, so a rule someone added to it would let out an adopted pod the Run's own policy isolates.
 * Replaced whole (PUT) at the cached version when any field differs, as a Run's is.
 */
async function syncPoolNetworkPolicy(ctx: ControllerContext, agent: PoolAgent, needed: boolean): Promise<void> {
  const desired = buildPoolNetworkPolicy(agent);
  const cached = ctx.cache.get("networkPolicy", agent.namespace, desired.metadata.name);
  if ((cached !== undefined || needed) && !isInPlace(desired, cached)) await ctx.writer.replace(desired, cached?.metadata.resourceVersion);
}

/**
 * Keeps the sandbox pods of the engine pods in `kept` (unbound, current, not retired; their claims exist) and
 * deletes the pool's others but those of adopted engine pods. `owned`: the Agent's objects in the cache.
 */
export async function syncPoolSandboxes(ctx: ControllerContext, at: { agent: PoolAgent; template: PoolTemplate | undefined; kept: readonly string[]; owned: readonly KubeObject[] }): Promise<void> {
  const { agent, template, kept, owned } = at;
  const hasRuntimeClass = (rc: string) => ctx.cache.get("runtimeClass", undefined, rc) !== undefined;
  const built = new Map(template === undefined ? [] : kept.map((pod) => [pod, listPoolSandboxPlans(template, pod, hasRuntimeClass).map((plan) => buildPoolSandboxPod(template, pod, plan, ctx.settings))]));
  const pods = owned.filter(isPoolSandboxPod);
  const observed = pods.map(observe);
  const pairs = new Map(observed.filter((s) => s.pair !== undefined && !built.has(s.pair)).map((s) => [s.pair!, pairStateOf(ctx.cache.get("pod", agent.namespace, s.pair!) as PodObject | undefined)]));
  const desired = new Map([...built].map(([pod, list]) => [pod, list.map((p) => ({ name: p.metadata.name, specHash: p.metadata.annotations?.[ANNOTATION.specHash] ?? "" }))]));
  const plan = decidePoolSandboxPods({ desired, pairs, sandboxes: observed });
  await Promise.all(plan.delete.map((name) => ctx.writer.deleteAtVersion(pods.find((p) => p.metadata.name === name)!)));
  const create = [...built.values()].flat().filter((p) => plan.create.includes(p.metadata.name));
  await syncPoolNetworkPolicy(ctx, agent, create.some((p) => p.metadata.labels?.[LABEL.network] !== undefined));
  // Never `create`, which would apply over a pod holding the name: what holds it (a Run's, say) is left as it is.
  await Promise.all(create.map((p) => ctx.writer.createOrGet(p)));
}
