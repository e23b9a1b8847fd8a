import { describe, expect, it } from "vitest";
import { AgentSpecSchema } from "../../api/agent.ts";
import { Conversation } from "./conversation.ts";
import { buildRunPlan } from "./stage-plan.ts";

const spec = AgentSpecSchema.parse({
  agent: { name: "a", entryStage: "survey" },
  stages: [
    { name: "survey", availableTools: ["read_file"], runtime: { model: { provider: "anthropic", model: "m1", fallbacks: ["openai/m2"], parameters: { temperature: 0.5, seed: 1 }, allow_user_default: false }, max_iterations: 0, transitions: { digest: { hint: "go" }, nowhere: {}, review: { condition: "stuck" } }, hooks: {} } },
    { name: "review", runtime: { mode: "fan_out" } },
    { name: "digest", runtime: { mode: "output", max_iterations: 3, output: { format: "markdown" }, transitions: {} } },
  ],
});

describe("buildRunPlan", () => {
  it("reads what the runtime follows and names every key it does not", () => {
    const plan = buildRunPlan(spec, undefined);
    expect(plan.entry).toBe("survey");
    const [survey, review, digest] = plan.stages;
    expect(survey!.model.models).toEqual([{ provider: "anthropic", model: "m1" }, { provider: "openai", model: "m2" }]);
    expect(survey!.model.sampling).toEqual({ temperature: 0.5 });
    expect(survey!.maxIterations).toBe(50);
    expect(survey!.transitions).toEqual([{ to: "digest", condition: "llm_choice", hint: "go", clear: false }]);
    expect(review!.transitions).toBeUndefined();
    expect(digest!.transitions).toEqual([]);
    expect(digest!.output).toEqual({ format: "markdown" });
    expect(plan.warnings).toEqual([
      "stages[0].runtime.hooks: ignored by leviath agent",
      "stages[0].runtime.transitions.nowhere: no stage 'nowhere'; edge ignored",
      "stages[0].runtime.transitions.review.condition: 'stuck' is not followed by leviath agent (followed: llm_choice, always, max_iterations, error); edge ignored",
      "stages[0].runtime.model.parameters.seed: not passed on by leviath agent (honoured: temperature, top_p, top_k, max_tokens, stop)",
      "stages[0].runtime.model.allow_user_default: ignored by leviath agent",
      "stages[1].runtime.mode: 'fan_out' runs as 'autonomous'",
    ]);
  });

  it("reads allow_complete: an output stage's default, a boolean, or a warning; and warns of a stage that may end before the output", () => {
    const withFlags = AgentSpecSchema.parse({
      agent: { name: "a", entryStage: "survey" },
      stages: [
        { name: "survey", runtime: { allow_complete: true, transitions: { digest: {} } } },
        { name: "review", runtime: { allow_complete: "yes" } },
        { name: "digest", runtime: { mode: "output", transitions: {} } },
        { name: "closed", runtime: { mode: "output", allow_complete: false } },
      ],
    });
    const plan = buildRunPlan(withFlags, undefined);
    expect(plan.stages.map((s) => s.allowComplete)).toEqual([true, false, true, false]);
    expect(plan.warnings).toEqual([
      "stages[1].runtime.allow_complete: not a boolean; false is used",
      "stages[0].runtime.allow_complete: the model may end the run in stage 'survey' and never reach the output stage (digest, closed); such a run fails without submit_output",
    ]);
    // Without an output stage, ending early skips nothing: no warning.
    const noOutput = AgentSpecSchema.parse({ agent: { name: "a" }, stages: [{ name: "survey", runtime: { allow_complete: true } }] });
    expect(buildRunPlan(noOutput, undefined).warnings).toEqual([]);
  });

  it("lets the Run's runtime.model replace every stage's models", () => {
    const plan = buildRunPlan(spec, { model: "vllm/qwen3" });
    expect(plan.stages.map((s) => s.model.models)).toEqual([[{ provider: "vllm", model: "qwen3" }], [{ provider: "vllm", model: "qwen3" }], [{ provider: "vllm", model: "qwen3" }]]);
    expect(buildRunPlan(spec, { model: "no-slash" }).warnings).toContain("run.runtime.model: 'no-slash' is not provider/model; ignored");
  });
});

describe("Conversation", () => {
  it("trims the oldest tool results past its budget, keeps each call's result slot, and returns what to evict", () => {
    const c = new Conversation(100);
    c.addUser("task", { region: "task", id: "task" });
    for (let i = 0; i < 6; i++) {
      const call = { id: `c${i}`, name: "read_file", args: {} };
      c.addAssistant("", [call]);
      c.addToolResult(call, "x".repeat(40), false);
    }
    expect(c.trim(2)).toEqual([{ region: "conversation", id: "c0" }, { region: "conversation", id: "c1" }, { region: "conversation", id: "c2" }, { region: "conversation", id: "c3" }]);
    const tools = c.messages().filter((m) => m.role === "tool");
    expect(tools).toHaveLength(6);
    expect(tools[0]).toMatchObject({ content: "[evicted: the result of read_file was dropped from the context to make room]" });
    expect(tools[5]).toMatchObject({ content: "x".repeat(40) });
    expect(c.trim(2)).toEqual([]);
    expect(c.clear(new Set(["task"]))).toEqual([{ region: "conversation", id: "c4" }, { region: "conversation", id: "c5" }]);
    expect(c.messages()).toEqual([{ role: "user", text: "task" }]);
  });
});
