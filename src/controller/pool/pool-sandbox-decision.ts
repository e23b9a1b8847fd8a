// Which of a warm pool's sandbox pods to create and delete (docs/controller.md, "Warm sandbox pods"), pure. Each
// pool engine pod the pool keeps has exactly the sandbox pods a Run bound to it would plan, each with the spec hash
// the Run would build; a sandbox pod whose engine pod a Run adopted is that Run's to take; every other one goes.

/** What the pool sees of the engine pod a sandbox pod is paired with. */
export type PairState =
  /** An unbound pool engine pod the pool keeps: its sandbox pods are kept to its plan. */
  | "pool"
  /** Adopted by a Run that may still start: the Run takes its sandbox pods (or prunes them). */
  | "bound"
  /** Gone, being deleted, retired, failed, or bound to a Run that is over: nobody will take its sandbox pods. */
  | "gone";

/** One unbound pool sandbox pod. */
export interface ObservedPoolSandbox {
  readonly name: string;
  /** The engine pod it was made for (its `leviath.dev/pool-pair` annotation). */
  readonly pair: string | undefined;
  readonly specHash: string | undefined;
  readonly deleting: boolean;
}

/** A sandbox pod the pool wants: its name and spec hash. */
export interface DesiredPoolSandbox {
  readonly name: string;
  readonly specHash: string;
}

export interface PoolSandboxInput {
  /** For each engine pod the pool keeps, the sandbox pods a Run bound to it would plan. */
  readonly desired: ReadonlyMap<string, readonly DesiredPoolSandbox[]>;
  /** The state of every other engine pod a sandbox pod names (absent: gone). */
  readonly pairs: ReadonlyMap<string, PairState>;
  readonly sandboxes: readonly ObservedPoolSandbox[];
}

/** The sandbox pods to create (by name) and those to delete. */
export function decidePoolSandboxPods(input: PoolSandboxInput): { create: string[]; delete: string[] } {
  const stateOf = (pair: string | undefined): PairState => (pair === undefined ? "gone" : input.desired.has(pair) ? "pool" : input.pairs.get(pair) ?? "gone");
  const wanted = (s: ObservedPoolSandbox) => input.desired.get(s.pair ?? "")?.some((d) => d.name === s.name && d.specHash === s.specHash) ?? false;
  const remove = input.sandboxes.filter((s) => !s.deleting && ((stateOf(s.pair) === "pool" && !wanted(s)) || stateOf(s.pair) === "gone")).map((s) => s.name);
  // A name still held (a pod deleted this pass or still terminating) is created on a later pass.
  const held = new Set(input.sandboxes.map((s) => s.name));
  const create = [...input.desired.values()].flat().filter((d) => !held.has(d.name)).map((d) => d.name);
  return { create, delete: remove };
}
