// The warm pools on the LeviathPolicy's status (docs/controller.md, "Warm pools"): per pool, its size and its
// unbound pods that are ready or still starting, read from the cache; pure.
import type { Pool, PoolStatus } from "../../api/pools.ts";
import type { ObservedPoolPod } from "./pool-decision.ts";

/** Each pool's status, and `ready/size` of every pool for `kubectl get` (undefined with no pool). */
export function computePoolStatuses(pools: readonly Pool[], podsOf: (pool: Pool) => readonly ObservedPoolPod[]): { pools: PoolStatus[]; display: string | undefined } {
  const statuses = pools.map((pool): PoolStatus => {
    const live = podsOf(pool).filter((p) => !p.deleting);
    return {
      agent: pool.agent,
      size: pool.size,
      ready: live.filter((p) => p.state === "ready").length,
      starting: live.filter((p) => p.state === "starting").length,
      // No Run adopts a pool pod yet (the Run controller's adoption is not built): every Run starts cold.
      adoptions: 0,
      misses: 0,
    };
  });
  const display = statuses.length === 0 ? undefined : statuses.map((s) => `${s.ready}/${s.size}`).join(" ").slice(0, 256);
  return { pools: statuses, display };
}
