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
  /** A Run adopted a pod of the pool, at `atMs` (the controller's clock). */
  adopted(agent: string, atMs?: number): void;
  /** When the pool's last adoption was (undefined: none since the controller started). */
  lastAdoption(agent: string): number | undefined;
  /** The pool is full again at `atMs`: each adoption since it was last full is observed as a time to refill. */
  full(agent: string, atMs: number): void;
  missed(agent: string, reason: PoolMissReason): void;
  counts(agent: string): PoolCounts;
  /** The unbound pods of every pool, as the policy's status last counted them. */
  pods(counts: { ready: number; starting: number }): void;
}

/** A ledger that also feeds the pool metrics. */
export function createPoolLedger(metrics: Pick<ControllerMetrics, "poolAdoption" | "poolMiss" | "poolPods" | "poolRefill">, nowMs: () => number = Date.now): PoolLedger {
  const byAgent = new Map<string, PoolCounts>();
  const of = (agent: string): PoolCounts => byAgent.get(agent) ?? { adoptions: 0, misses: 0 };
  // Each pool's adoptions not yet refilled (their times), and its last adoption.
  const unfilled = new Map<string, number[]>();
  const last = new Map<string, number>();
  return {
    adopted(agent, atMs = nowMs()) {
      byAgent.set(agent, { ...of(agent), adoptions: of(agent).adoptions + 1 });
      unfilled.set(agent, [...(unfilled.get(agent) ?? []), atMs]);
      last.set(agent, atMs);
      metrics.poolAdoption();
    },
    lastAdoption: (agent) => last.get(agent),
    full(agent, atMs) {
      for (const at of unfilled.get(agent) ?? []) metrics.poolRefill(Math.max(0, atMs - at) / 1000);
      unfilled.delete(agent);
    },
    missed(agent, reason) {
      byAgent.set(agent, { ...of(agent), misses: of(agent).misses + 1 });
      metrics.poolMiss(reason);
    },
    counts: of,
    pods: (counts) => metrics.poolPods(counts),
  };
}
