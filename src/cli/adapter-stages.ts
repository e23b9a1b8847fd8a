// `leviath adapter` over an Agent's stages: the client is started once per stage, with the stage's instructions
// and task, the sidecar offering the stage's tools; after each exit the adapter reads where the run is (GET
// /v1/stage), and src/runtime/adapters/stage-steps.ts decides what comes next, as the reference runtime would. Every
// move it makes itself goes through POST /v1/stage (refused unless the stage declares it), a `clear` transition evicts
// the context at the sidecar, and each stage is entered at most 1 + max_revisits times: the loop always ends.
import type { RunPlan, StagePlan } from "../runtime/reference/stage-plan.ts";
import type { RuntimeAdapter } from "../runtime/adapters/adapters.ts";
import { buildStageTask, decideStageStep } from "../runtime/adapters/stage-steps.ts";
import type { SidecarClient } from "../runtime/sidecar-client.ts";
import type { ProgramExit } from "./adapter-process.ts";

/** What the stage loop works with. */
export interface StageLoop {
  readonly plan: RunPlan;
  readonly adapter: RuntimeAdapter;
  readonly link: SidecarClient;
  /** The task as the Run gives it (the stage's run may add the last stage's answer). */
  readonly task: string;
  /** Regions a `clear` keeps: the task's and the inputs'. */
  readonly keep: ReadonlySet<string>;
  /** Starts the client once in `stage` with `task`. */
  readonly runOnce: (stage: StagePlan, task: string) => Promise<ProgramExit>;
  /** Why the client's run is over without an answer to hand over, if it is (src/cli/adapter.ts). */
  readonly describeExit: (exit: ProgramExit) => string | undefined;
  readonly log: (line: string) => void;
}

/** How the stages ended: the last client's exit, and whether the run ends with its answer or failed. */
export type StagesEnd =
  | { readonly kind: "answer"; readonly exit: ProgramExit; readonly why: string }
  | { readonly kind: "submitted"; readonly stage: string }
  | { readonly kind: "failed"; readonly code: number; readonly message: string };

/** Whether the sidecar already stored a result for the run. */
async function hasResult(link: SidecarClient): Promise<boolean> {
  const { result } = await link.readStatus();
  return result !== undefined && result !== null;
}

/** A `clear` transition: everything the sidecar holds but the task and the inputs is evicted (the next client holds none of it). */
async function clearContext(at: StageLoop): Promise<void> {
  const { entries } = await at.link.listEntries();
  const dropped = entries.filter((e) => !at.keep.has(e.region)).map((e) => ({ region: e.region, id: e.id }));
  if (dropped.length === 0) return;
  const r = await at.link.evict(dropped);
  at.log(`context cleared: ${r.evicted} entries evicted, context taint now ${r.taint}`);
}

/** Runs the client stage after stage from the one the sidecar is in, until the run ends or fails. */
export async function runStages(at: StageLoop): Promise<StagesEnd> {
  const visits = new Map<string, number>();
  const { stage: first } = await at.link.readStage();
  let stage = at.plan.stages.find((s) => s.name === first);
  if (stage === undefined) return { kind: "failed", code: 1, message: `the sidecar is in stage '${first}', which the Agent does not declare` };
  let carried: Carried | undefined;
  for (;;) {
    const seen = (visits.get(stage.name) ?? 0) + 1;
    visits.set(stage.name, seen);
    if (seen > 1 + stage.maxRevisits) return { kind: "failed", code: 1, message: `stage '${stage.name}' entered more than ${1 + stage.maxRevisits} times (max_revisits ${stage.maxRevisits})` };
    const next = await runStage(at, stage, carried);
    if ("kind" in next) return next;
    ({ stage, carried } = next);
  }
}

/** The last stage's final answer, given to the next with the task. */
type Carried = { readonly stage: string; readonly answer: string };

/**
 * Whether a failed run of the client ends the run with its own reason: ended from outside (the Run cancelled, its
 * deadline), never started, or failed where no `error` edge leads on.
 */
function endsOnFailure(stage: StagePlan, exit: ProgramExit): boolean {
  if (exit.signal !== null || exit.forwarded !== undefined || exit.spawnError !== undefined) return true;
  return !(stage.transitions ?? []).some((e) => e.condition === "error");
}

/** One run of the client in `stage`: how the run ended, or the next stage (entered, its context cleared if the edge says so). */
async function runStage(at: StageLoop, stage: StagePlan, carried: Carried | undefined): Promise<StagesEnd | { stage: StagePlan; carried: Carried | undefined }> {
  at.log(`stage '${stage.name}': starting ${at.adapter.program}`);
  const exit = await at.runOnce(stage, buildStageTask(at.task, carried));
  const failed = at.describeExit(exit);
  const code = exit.code === 0 ? 1 : exit.code;
  if (failed !== undefined && endsOnFailure(stage, exit)) return { kind: "failed", code, message: failed };
  if (failed === undefined && (await hasResult(at.link))) return { kind: "submitted", stage: stage.name };
  const step = decideStageStep(at.plan, { ran: stage, now: (await at.link.readStage()).stage, ...(failed === undefined ? {} : { failed }) });
  if (step.kind === "fail") return { kind: "failed", code, message: step.message };
  if (step.kind === "end") return { kind: "answer", exit, why: step.why };
  at.log(step.why);
  if (step.enter) await at.link.enterStage(step.stage.name);
  if (step.clear) await clearContext(at);
  const answer = at.adapter.readAnswer(exit.stdout, exit.answerFile);
  return { stage: step.stage, carried: !step.clear && answer.ok ? { stage: stage.name, answer: answer.answer } : undefined };
}
