// What the warm pools served since the controller started (docs/controller.md, "Warm pools"): the Run controller
// records each adoption and miss here, the policy controller reads the counts for its status.pools, and both go to
// the metrics. In memory: the counts start at 0 with each leader, as the metrics do.
import type { PoolMissReason } from "../../api/pools.ts";
import type { ControllerMetrics } from "../../metrics/controller-metrics.ts";

/** One pool's counts. */
export interface PoolCounts {
  readonly adoptions: number;
  readonly misses: number;
}

/** The adoptions and misses of each pool, by its Agent (`<namespace>/<name>`). */
export interface PoolLedger {
  adopted(agent: string): void;
  missed(agent: string, reason: PoolMissReason): void;
  counts(agent: string): PoolCounts;
  /** The unbound pods of every pool, as the policy's status last counted them. */
  pods(counts: { ready: number; starting: number }): void;
}

/** A ledger that also feeds the pool metrics. */
export function createPoolLedger(metrics: Pick<ControllerMetrics, "poolAdoption" | "poolMiss" | "poolPods">): PoolLedger {
  const byAgent = new Map<string, PoolCounts>();
  const of = (agent: string): PoolCounts => byAgent.get(agent) ?? { adoptions: 0, misses: 0 };
  return {
    adopted(agent) {
      byAgent.set(agent, { ...of(agent), adoptions: of(agent).adoptions + 1 });
      metrics.poolAdoption();
    },
    missed(agent, reason) {
      byAgent.set(agent, { ...of(agent), misses: of(agent).misses + 1 });
      metrics.poolMiss(reason);
    },
    counts: of,
    pods: (counts) => metrics.poolPods(counts),
  };
}
