// The warm pools on the LeviathPolicy's status (docs/controller.md, "Warm pools"): per pool, its size and its
// unbound pods that are ready or still starting, read from the cache, and what it served; pure.
import type { Pool, PoolStatus } from "../../api/pools.ts";
import type { ObservedPoolPod } from "../warm/pool-pod-lookup.ts";
import type { PoolCounts } from "./pool-ledger.ts";

/** Each pool's status, and `ready/size` of every pool for `kubectl get` (undefined with no pool). */
export function computePoolStatuses(pools: readonly Pool[], podsOf: (pool: Pool) => readonly ObservedPoolPod[], countsOf: (pool: Pool) => PoolCounts): { pools: PoolStatus[]; display: string | undefined } {
  const statuses = pools.map((pool): PoolStatus => {
    const live = podsOf(pool).filter((p) => !p.deleting);
    return {
      agent: pool.agent,
      size: pool.size,
      ready: live.filter((p) => p.state === "ready").length,
      starting: live.filter((p) => p.state === "starting").length,
      ...countsOf(pool),
    };
  });
  const display = statuses.length === 0 ? undefined : statuses.map((s) => `${s.ready}/${s.size}`).join(" ").slice(0, 256);
  return { pools: statuses, display };
}
