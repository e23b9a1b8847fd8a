import { describe, expect, it } from "vitest";
import { buildRunPlan, type RunPlan, type StagePlan } from "../reference/stage-plan.ts";
import { AgentSpecSchema } from "../../api/agent.ts";
import { buildStageInstructions, buildStageTask, decideStageStep, type StageStep } from "./stage-steps.ts";

const planOf = (stages: unknown[]): RunPlan => buildRunPlan(AgentSpecSchema.parse({ agent: { name: "a" }, stages }), undefined);
const stageOf = (plan: RunPlan, name: string): StagePlan => plan.stages.find((s) => s.name === name)!;
/** A step in short: where it goes and how, or the end, or the failure's message. */
const brief = (step: StageStep) => (step.kind === "run" ? `run ${step.stage.name}${step.enter ? " entered" : ""}${step.clear ? " cleared" : ""}` : step.kind === "end" ? "end" : `fail: ${step.message}`);
const after = (plan: RunPlan, ran: string, now = ran, failed?: string) => brief(decideStageStep(plan, { ran: stageOf(plan, ran), now, ...(failed === undefined ? {} : { failed }) }));

describe("decideStageStep: where the run goes once the client's run of a stage ended, as the reference runtime decides", () => {
  const plan = planOf([
    { name: "survey", runtime: { system_prompt: "Survey.", transitions: { digest: { hint: "read enough", transform: "clear" }, fix: { condition: "error" }, retry: { condition: "max_iterations" } } } },
    { name: "pick", runtime: { transitions: { digest: {} } } },
    { name: "fix", runtime: { transitions: { digest: { condition: "always" } } } },
    { name: "retry" },
    { name: "digest", runtime: { mode: "output", transitions: {} } },
  ]);

  it("follows the model's next_stage made at the sidecar (clearing the context where its edge says so)", () => {
    expect(after(plan, "survey", "digest")).toBe("run digest cleared");
    // A move no edge of the stage explains (two in one run): the run goes on there, every label kept.
    expect(after(plan, "pick", "fix")).toBe("run fix");
    expect(after(plan, "survey", "elsewhere")).toBe("fail: the sidecar is in stage 'elsewhere', which the Agent does not declare");
  });

  it("without a move: always, the max_iterations edge where the model chose nothing, the next stage where none is declared, the output's end", () => {
    expect(after(plan, "fix")).toBe("run digest entered");
    expect(after(plan, "survey")).toBe("run retry entered");
    expect(after(plan, "retry")).toBe("run digest entered");
    expect(after(plan, "digest")).toBe("end");
  });

  it("fails closed where the model had to choose and did not, and where the client failed with no error edge", () => {
    expect(after(plan, "pick")).toBe("fail: stage 'pick' ended without next_stage: the model chose none of digest");
    expect(after(plan, "survey", "survey", "codex exited with code 1")).toBe("run fix entered");
    expect(after(plan, "pick", "pick", "codex exited with code 1")).toBe("fail: codex exited with code 1");
  });

  it("ends where the stage may complete, unless the Agent has an output stage this run never reached", () => {
    const completes = planOf([{ name: "work", runtime: { allow_complete: true, transitions: { more: {} } } }, { name: "more" }]);
    expect(after(completes, "work")).toBe("end");
    expect(after(completes, "more")).toBe("end");
    const skips = planOf([{ name: "work", runtime: { allow_complete: true, transitions: { out: {} } } }, { name: "out", runtime: { mode: "output" } }]);
    expect(after(skips, "work")).toBe("fail: the run ended in stage 'work' without submit_output (output stage: out)");
  });
});

describe("what a stage's client is given", () => {
  it("a one-stage Agent: its system_prompt alone (or nothing); a multi-stage one: the stage's prompt, its choices, and to stop after choosing", () => {
    expect(buildStageInstructions(planOf([{ name: "main" }]), planOf([{ name: "main" }]).stages[0]!)).toBeUndefined();
    const one = planOf([{ name: "main", runtime: { system_prompt: " Be brief. " } }]);
    expect(buildStageInstructions(one, one.stages[0]!)).toBe("Be brief.");
    const two = planOf([{ name: "survey", runtime: { system_prompt: "Survey.", allow_complete: true, transitions: { digest: { hint: "read enough" } } } }, { name: "digest" }]);
    expect(buildStageInstructions(two, two.stages[0]!)).toBe([
      "Survey.",
      "You are in stage 'survey'. Use the tools to do the work; every tool call is checked by a policy, and a refused call says why.",
      "When this stage's work is done, call next_stage with the stage to go to:\n- digest: read enough\nIf no further stage is needed, end your turn without calling it: the run ends here.\nOnce it has answered, end your turn: the next stage starts afresh, with its own tools and instructions.",
    ].join("\n\n"));
  });

  it("the task, then after a transition that keeps the context the last stage's final answer", () => {
    expect(buildStageTask("Task: x")).toBe("Task: x");
    expect(buildStageTask("Task: x", { stage: "survey", answer: "found y" })).toBe("Task: x\n\nStage 'survey' ended with:\nfound y");
  });
});
