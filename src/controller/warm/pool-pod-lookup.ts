// Which cached pods are a warm pool's, and what the controllers see of them (docs/controller.md, "Warm pools").
// Shared by the pool controller, which keeps the pools, and the Run controller, which adopts from them; neither
// owns it. Pure over the cache.
import { KIND, LABEL } from "../../api/constants.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { ANNOTATION, buildLabelValue, COMPONENT } from "../../sandbox/names.ts";
import { POOL_STATE } from "../../sandbox/pool-pods.ts";
import type { ClusterCache } from "../cluster-port.ts";
import type { PodObject } from "../owned-children.ts";

/** A pool pod's state as the controller sees it. */
export type PoolPodState = "ready" | "starting" | "bound" | "failed";

/** What the controller sees of one pool pod. */
export interface ObservedPoolPod {
  readonly name: string;
  readonly state: PoolPodState;
  /** Its `leviath.dev/pool-hash`. */
  readonly hash: string | undefined;
  /** Its creation time (ms): the oldest ready pod is adopted first, the youngest surplus one deleted first. */
  readonly createdMs: number;
  /** Being deleted: counts for nothing. */
  readonly deleting: boolean;
}

/** The kubelet's view of a pool pod, as much as {@link observePoolPodState} reads. */
export interface PoolPodView {
  readonly bound: boolean;
  readonly phase?: string | undefined;
  readonly ready: boolean;
}

/** A pool pod's state: bound once claimed, failed once its phase ended, ready once the kubelet says Ready, else starting. */
export function observePoolPodState(view: PoolPodView): PoolPodState {
  if (view.bound) return "bound";
  if (view.phase === "Failed" || view.phase === "Succeeded") return "failed";
  return view.phase === "Running" && view.ready ? "ready" : "starting";
}

/** Whether an object is a pool's engine pod (not one of its sandbox pods). */
export function isPoolEnginePod(obj: KubeObject): obj is PodObject {
  return obj.kind === "Pod" && obj.metadata.labels?.[LABEL.pool] !== undefined && obj.metadata.labels[LABEL.component] === COMPONENT.engine;
}

/** Whether an object is one of a pool's sandbox pods. */
export function isPoolSandboxPod(obj: KubeObject): obj is PodObject {
  return obj.kind === "Pod" && obj.metadata.labels?.[LABEL.pool] !== undefined && obj.metadata.labels[LABEL.component] === COMPONENT.sandbox;
}

/** What the controller sees of one cached pool pod. */
export function observePoolPod(pod: PodObject): ObservedPoolPod {
  const labels = pod.metadata.labels ?? {};
  return {
    name: pod.metadata.name,
    state: observePoolPodState({
      bound: labels[LABEL.poolState] !== POOL_STATE.ready,
      phase: pod.status?.phase,
      ready: pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    }),
    hash: pod.metadata.annotations?.[ANNOTATION.poolHash],
    createdMs: Date.parse(String(pod.metadata.creationTimestamp ?? "")) || 0,
    deleting: pod.metadata.deletionTimestamp !== undefined,
  };
}

/** The unbound pods (owned by the Agent) of the pool of Agent `<namespace>/<name>`, from the cache. */
export function listPoolPods(cache: ClusterCache, agentKey: string): ObservedPoolPod[] {
  const [namespace = "", agent = ""] = agentKey.split("/");
  const label = buildLabelValue(agent);
  return (cache.list("pod", namespace) as PodObject[])
    .filter((p) => isPoolEnginePod(p) && p.metadata.labels?.[LABEL.pool] === label && p.metadata.ownerReferences?.some((r) => r.controller && r.kind === KIND.agent && r.name === agent))
    .map(observePoolPod);
}
