// What a pool pass left behind when it stopped between two writes (issue 41): a pool pod's identity (ServiceAccount,
// Role, RoleBinding) and claim are created before the pod, so a pass that stops in between (the controller killed,
// the pod's create refused) leaves them owned by the Agent with no pod, and retiring, which works per pod, never
// finds them. An object of the pool whose pod exists nowhere in the cache (under any owner: a Run that adopted the pod
// keeps its identity and claim, even while their owner is still being changed) is deleted at the version seen, once
// a grace period has passed since it was created: the pass that made it may still be on its way to the pod, or the
// cache not yet have the pod it made.
import { LABEL } from "../../api/constants.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { COMPONENT } from "../../sandbox/names.ts";
import { buildPoolNames } from "../../sandbox/pool-pods.ts";
import type { ClusterCache } from "../cluster-port.ts";

/** How long a pool pod's identity or claim may be without its pod before it is collected (default). */
export const POOL_LEFTOVER_GRACE_MS = 60_000;

const IDENTITY_KINDS: ReadonlySet<string> = new Set(["ServiceAccount", "Role", "RoleBinding"]);
/** What a pool pod's claim adds to the pod's name (`-workspace`). */
const CLAIM_SUFFIX = ((names) => names.workspace.slice(names.pod.length))(buildPoolNames("a", "b"));

/**
 * The pool pod an object of the pool was made for (its identity bears the pod's name, its claim `<pod>-workspace`),
 * or undefined when it is not a pod's identity or claim (a pod, the pool's NetworkPolicy); pure.
 */
export function poolPodOf(obj: KubeObject): string | undefined {
  const labels = obj.metadata.labels ?? {};
  if (labels[LABEL.pool] === undefined) return undefined;
  const component = labels[LABEL.component];
  if (IDENTITY_KINDS.has(obj.kind) && component === COMPONENT.sidecarIdentity) return obj.metadata.name;
  if (obj.kind === "PersistentVolumeClaim" && component === COMPONENT.workspace && obj.metadata.name.endsWith(CLAIM_SUFFIX)) {
    return obj.metadata.name.slice(0, -CLAIM_SUFFIX.length);
  }
  return undefined;
}

/** What the decision reads: the Agent's objects, which of their pods the cache holds, the pass's time, the grace. */
export interface PoolLeftoverFacts {
  readonly owned: readonly KubeObject[];
  /** The names of the pool pods (any owner) the cache holds, among those the objects were made for. */
  readonly livePods: ReadonlySet<string>;
  readonly nowMs: number;
  readonly graceMs: number;
}

/** Objects to delete now (each at the version seen), and when to look again for those still within their grace. */
export interface PoolLeftoverPlan {
  readonly collect: readonly KubeObject[];
  readonly recheckMs?: number | undefined;
}

const createdMsOf = (obj: KubeObject): number => {
  const t = obj.metadata.creationTimestamp as string | Date | undefined;
  const ms = t instanceof Date ? t.getTime() : t === undefined ? Number.NaN : Date.parse(t);
  return Number.isNaN(ms) ? Number.NEGATIVE_INFINITY : ms;
};

/** Which identities and claims of the pool have no pod and are past their grace; pure. */
export function decidePoolLeftovers(f: PoolLeftoverFacts): PoolLeftoverPlan {
  const collect: KubeObject[] = [];
  const waits: number[] = [];
  for (const obj of f.owned) {
    const pod = poolPodOf(obj);
    if (pod === undefined || f.livePods.has(pod) || obj.metadata.deletionTimestamp !== undefined) continue;
    const left = createdMsOf(obj) + f.graceMs - f.nowMs;
    if (left <= 0) collect.push(obj);
    else waits.push(left);
  }
  return { collect, ...(waits.length > 0 ? { recheckMs: Math.min(...waits) } : {}) };
}

/** The pool pods the cache holds (under any owner) among those the Agent's identities and claims were made for. */
export function readLivePoolPods(cache: ClusterCache, namespace: string, owned: readonly KubeObject[]): Set<string> {
  const names = new Set(owned.flatMap((o) => { const pod = poolPodOf(o); return pod === undefined ? [] : [pod]; }));
  return new Set([...names].filter((name) => cache.get("pod", namespace, name) !== undefined));
}
