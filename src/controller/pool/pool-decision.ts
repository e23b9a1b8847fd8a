// The warm pool's decisions (docs/controller.md, "Warm pools"), pure: which pool pods to create and delete so each
// pool keeps its size of ready, unbound, current pods, and which ready pod a Run adopts, or why it starts cold.
import type { Pool, PoolMissReason } from "../../api/pools.ts";
import type { Workspace } from "../../api/run.ts";
import { POOL_WORKSPACE } from "../../sandbox/pool-pods.ts";
import type { ObservedPoolPod } from "../warm/pool-pod-lookup.ts";

/** At most this many pool pods created per pool and pass: a new pool fills over a few passes, never in one burst. */
export const MAX_POOL_CREATES_PER_PASS = 4;

/** What to do with one pool this pass, and its counts for the status. */
export interface PoolPlan {
  /** How many new pool pods to create. */
  readonly create: number;
  /** Unbound pods to delete: stale, failed, or past the size. */
  readonly delete: readonly string[];
  readonly ready: number;
  readonly starting: number;
}

const byAge = (a: ObservedPoolPod, b: ObservedPoolPod) => a.createdMs - b.createdMs || a.name.localeCompare(b.name);

/**
 * Keep `size` unbound pods of the current hash: delete the failed and stale ones (never a bound one: it is its
 * Run's), delete the youngest past the size, and create what is missing, at most {@link MAX_POOL_CREATES_PER_PASS}.
 * A pool no longer declared is `size` 0: every unbound pod goes.
 */
export function decidePoolPods(size: number, currentHash: string, pods: readonly ObservedPoolPod[]): PoolPlan {
  const live = pods.filter((p) => !p.deleting && p.state !== "bound");
  const retired = live.filter((p) => p.state === "failed" || p.hash !== currentHash);
  const fresh = live.filter((p) => !retired.includes(p)).sort(byAge);
  const surplus = fresh.slice(size);
  const kept = fresh.slice(0, size);
  return {
    create: Math.min(MAX_POOL_CREATES_PER_PASS, Math.max(0, size - kept.length)),
    delete: [...retired, ...surplus].map((p) => p.name).sort(),
    ready: kept.filter((p) => p.state === "ready").length,
    starting: kept.filter((p) => p.state === "starting").length,
  };
}

/** What decides whether a Run may be served from its Agent's pool. */
export interface AdoptionInput {
  /** The pool declared for the Run's Agent, if any. */
  readonly pool: Pool | undefined;
  /** The pool hash the Run's pinned snapshot gives (its image, runtime kind, read-path volumes, the pod settings). */
  readonly runHash: string;
  /** The Run's pinned workspace. */
  readonly workspace: Pick<Workspace, "claimName" | "mountPath" | "size" | "accessMode" | "storageClassName">;
  /** Some stage runs commands in the engine pod (kind `none`, or a fallback). */
  readonly hostExec: boolean;
  /** The Run's sidecar mounts an MCP server's Secret (a pool pod's volumes are fixed before any Run). */
  readonly mcpSecrets: boolean;
  /** The pool's pods. */
  readonly pods: readonly ObservedPoolPod[];
  /** Pods this Run already lost a race for (another Run claimed them first). */
  readonly lost?: ReadonlySet<string>;
}

/** Adopt this pod; start cold for this reason; or there is no pool to speak of (cold, not a miss). */
export type AdoptionDecision = { readonly kind: "adopt"; readonly pod: string } | { readonly kind: "miss"; readonly reason: PoolMissReason; readonly message: string } | { readonly kind: "no-pool" };

/** Why a Run cannot run in a pool pod at all (undefined: it can). */
function ineligible(input: AdoptionInput): string | undefined {
  const ws = input.workspace;
  if (ws.claimName !== undefined) return `the Run names the workspace claim '${ws.claimName}'; a pool pod works in a claim of its own`;
  if (ws.mountPath !== POOL_WORKSPACE.mountPath || ws.size !== POOL_WORKSPACE.size || ws.accessMode !== POOL_WORKSPACE.accessMode || ws.storageClassName !== undefined) {
    return `the Run asks for another workspace than the pool's (${POOL_WORKSPACE.mountPath}, ${POOL_WORKSPACE.size}, ${POOL_WORKSPACE.accessMode}, the default storage class)`;
  }
  if (input.hostExec) return "a stage of the Run runs commands in the engine pod, which a pool pod never does";
  if (input.mcpSecrets) return "the Run's sidecar needs an MCP server's Secret mounted, which a pool pod does not have";
  return undefined;
}

/** Which ready pool pod a Run adopts: the oldest ready one made from what the Run's snapshot pins, not lost to another Run. */
export function decideAdoption(input: AdoptionInput): AdoptionDecision {
  if (input.pool === undefined || input.pool.size === 0) return { kind: "no-pool" };
  const why = ineligible(input);
  if (why !== undefined) return { kind: "miss", reason: "not-eligible", message: why };
  const lost = input.lost ?? new Set<string>();
  const candidates = input.pods.filter((p) => p.state === "ready" && !p.deleting && p.hash === input.runHash).sort(byAge);
  const open = candidates.filter((p) => !lost.has(p.name));
  if (open[0] !== undefined) return { kind: "adopt", pod: open[0].name };
  if (candidates.length > 0) return { kind: "miss", reason: "claim-conflict", message: "every ready pool pod was claimed by another Run first" };
  return { kind: "miss", reason: "no-ready-pod", message: `the pool of '${input.pool.agent}' has no ready pod made from what this Run pins` };
}
