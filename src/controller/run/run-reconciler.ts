// The Run controller's reconciler: one pass per key is `gatherRun` (every read, run-gather.ts) → `planRun` (pure,
// run-plan.ts) → `applyRunPlan` (the writes in a fixed order, one status write, run-apply.ts). When the applier
// learns the answer of a conditional write the plan depends on (the start snapshot accepted or refused, a pool pod
// claimed), the pass plans again from the same observation with that answer, and applies that plan.
import type { ReconcileResult } from "../cluster-port.ts";
import { createTransitionRecorder } from "../status-events.ts";
import { applyRunPlan, type ApplyContext } from "./run-apply.ts";
import { createChildWriter } from "./run-children-sync.ts";
import { gatherRun, type RunReconcilerDeps } from "./run-gather.ts";
import { planRun } from "./run-plan.ts";

export type { RunReconcilerDeps } from "./run-gather.ts";

/** Reconcile one Run: pin its policy once, build its children, write them, prune the rest, report status. */
export function createRunReconciler(deps: RunReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const ctx: ApplyContext = {
    deps, written: new Map(),
    recordTransitions: createTransitionRecorder(deps.events),
    syncChildren: createChildWriter(deps.cache, deps.writer).syncChildren,
  };
  return async (key) => {
    let obs = await gatherRun(ctx, key);
    if (obs === undefined) return {};
    // The prompts the sidecar reports: each new one is notified once (fire and forget; the Event is the status's).
    deps.approvalNotifier?.notePending(obs.run);
    // Bounded: each answer is learned once (the pin, the claim, the resumed snapshot), and a plan made with it asks for no other.
    for (;;) {
      const applied = await applyRunPlan(ctx, obs, planRun(obs));
      if ("result" in applied) return applied.result;
      obs = { ...obs, answers: { ...obs.answers, ...applied.learned } };
    }
  };
}
