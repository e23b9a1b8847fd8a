// A multi-stage Agent under a runtime adapter: the client is started once per stage, with that stage's instructions
// and the sidecar offering that stage's tools, and where the run goes once it exits is decided here, by the rules
// the reference runtime follows (src/runtime/reference/agent-run.ts and stage-loop.ts): the model's `next_stage` (made
// at the sidecar, read back with GET /v1/stage), else the stage's `always` edge, the end of an output stage or of one
// that may complete, its `max_iterations` edge where the model chose nothing, the next stage where none is declared, or
// the run's end. A stage that needs a choice and got none fails the run (the reference runtime would nudge the model;
// a client that has exited cannot be). Pure: the adapter (src/cli/adapter-stages.ts) does the I/O.
import { buildSystemPrompt } from "../reference/stage-loop.ts";
import { findFallThroughStage } from "../../policy/stage-order.ts";
import type { RunPlan, StagePlan } from "../reference/stage-plan.ts";
import type { TransitionPlan } from "../../policy/stage-transitions.ts";

/** What the adapter does once a client's run of a stage has ended. */
export type StageStep =
  /** Start the client again in `stage`; `enter`: move the sidecar there first (POST /v1/stage); `clear`: evict the context. */
  | { readonly kind: "run"; readonly stage: StagePlan; readonly enter: boolean; readonly clear: boolean; readonly why: string }
  /** The run ends: the client's final answer becomes the Run's result (unless the model submitted one). */
  | { readonly kind: "end"; readonly why: string }
  | { readonly kind: "fail"; readonly message: string };

/** How one run of the client ended, as the adapter sees it. */
export interface StageRunEnd {
  /** The stage the client was started in. */
  readonly ran: StagePlan;
  /** The stage the sidecar is in now (GET /v1/stage). */
  readonly now: string;
  /** Why the client's run failed (it exited with an error), if it did. */
  readonly failed?: string;
}

/** The instructions a client is given in `stage`: the stage's system prompt, and in a multi-stage Agent what the stage expects. */
export function buildStageInstructions(plan: RunPlan, stage: StagePlan): string | undefined {
  if (plan.stages.length === 1) return stage.systemPrompt.trim() || undefined;
  return buildSystemPrompt(stage, (stage.transitions ?? []).filter((e) => e.condition === "llm_choice"), true);
}

/** The task a client is given: the Run's, then (after a transition that keeps the context) the last stage's final answer. */
export function buildStageTask(task: string, carried?: { readonly stage: string; readonly answer: string }): string {
  return carried === undefined ? task : `${task}\n\nStage '${carried.stage}' ended with:\n${carried.answer}`;
}

/** Where the run goes after the client's run of a stage ended. */
export function decideStageStep(plan: RunPlan, end: StageRunEnd): StageStep {
  const { ran, now } = end;
  const byName = new Map(plan.stages.map((s) => [s.name, s]));
  if (now !== ran.name) {
    const next = byName.get(now);
    if (next === undefined) return { kind: "fail", message: `the sidecar is in stage '${now}', which the Agent does not declare` };
    // The model moved the run at the sidecar; more than one move in one run of the client keeps every label.
    const edge = ran.transitions?.find((e) => e.to === now && e.condition === "llm_choice");
    return { kind: "run", stage: next, enter: false, clear: edge?.clear ?? false, why: edge ? `the model chose it (next_stage): ${ran.name} → ${now}` : `the run moved on to '${now}'` };
  }
  const follow = (edge: TransitionPlan, why: string): StageStep => ({ kind: "run", stage: byName.get(edge.to)!, enter: true, clear: edge.clear, why: `${why}: ${ran.name} → ${edge.to}` });
  const edges = ran.transitions ?? [];
  if (end.failed !== undefined) {
    const onError = edges.find((e) => e.condition === "error");
    return onError ? follow(onError, `the client failed (${end.failed})`) : { kind: "fail", message: end.failed };
  }
  const always = edges.find((e) => e.condition === "always");
  if (always) return follow(always, "the stage's work ended (condition always)");
  if (ran.output) return endRun(plan, ran, `output stage '${ran.name}' ended`);
  const choices = edges.filter((e) => e.condition === "llm_choice");
  if (choices.length === 0) return decideUndirected(plan, ran);
  if (ran.allowComplete) return endRun(plan, ran, `stage '${ran.name}' ended without a choice and may complete (allow_complete)`);
  const onMax = edges.find((e) => e.condition === "max_iterations");
  if (onMax) return follow(onMax, "the client ended the stage without choosing where to go");
  return { kind: "fail", message: `stage '${ran.name}' ended without next_stage: the model chose none of ${choices.map((e) => e.to).join(", ")}` };
}

/** A stage the model does not choose out of: the next declared stage where it declares no transitions, else the run's end. */
function decideUndirected(plan: RunPlan, ran: StagePlan): StageStep {
  const next = findFallThroughStage(plan.stages, plan.stages.indexOf(ran));
  if (next !== undefined) return { kind: "run", stage: next, enter: true, clear: false, why: `stage '${ran.name}' ended: ${ran.name} → ${next.name} (the next declared stage)` };
  return endRun(plan, ran, `stage '${ran.name}' ended, the last of the run`);
}

/** The run's end in `ran`: refused, as the reference runtime's, where the Agent has an output stage and this is not it. */
function endRun(plan: RunPlan, ran: StagePlan, why: string): StageStep {
  const outputs = plan.stages.filter((s) => s.output !== undefined).map((s) => s.name);
  if (outputs.length > 0 && ran.output === undefined) return { kind: "fail", message: `the run ended in stage '${ran.name}' without submit_output (output stage: ${outputs.join(", ")})` };
  return { kind: "end", why };
}
