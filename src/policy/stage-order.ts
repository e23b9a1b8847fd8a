// Where a stage goes when nothing chooses: the one rule of declaration order that the reference runtime, the
// adapter's stage steps and the sidecar's POST /v1/stage share (upstream's stage graph, spec/sandbox-and-blueprint).

/**
 * The stage a run falls through to from `stages[index]`: the next one in declaration order where that stage declares
 * no transitions (`transitions` absent, not empty); undefined where it declares some, or is the last.
 */
export function findFallThroughStage<S extends { transitions?: unknown }>(stages: readonly S[], index: number): S | undefined {
  const stage = stages[index];
  return stage === undefined || stage.transitions !== undefined ? undefined : stages[index + 1];
}
