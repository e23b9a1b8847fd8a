// One stage: the model loop. Each iteration is one model turn; every tool call goes to the sidecar (through the
// tool client) and its outcome, refusals included, goes back to the model. The stage ends when the model hands
// over the output, picks a transition, ends its turn where the blueprint lets it, or runs out of iterations.
import { describeNextStageTool, NEXT_STAGE_TOOL, RESULT_TOOL } from "../../api/tools.ts";
import type { Conversation } from "./conversation.ts";
import { ProviderError, type ModelProvider, type ModelTurn, type ToolCall, type ToolSpec } from "./providers/types.ts";
import type { ProviderLookup } from "./provider-registry.ts";
import type { SidecarClient } from "../sidecar-client.ts";
import type { StagePlan } from "./stage-plan.ts";
import type { TransitionPlan } from "../../policy/stage-transitions.ts";
import type { ToolClient } from "./tool-client.ts";
import { describeArgs, type Transcript } from "./transcript.ts";

/** The runtime's own tool for picking a transition: it never reaches the sidecar (it does nothing outside). */
export { NEXT_STAGE_TOOL };
/** The choice that ends the run in a stage with `allow_complete` (upstream's word). */
export const DONE_CHOICE = "DONE";

/** How a stage ended. */
export type StageEnd =
  | { readonly kind: "submitted" }
  | { readonly kind: "transition"; readonly edge: TransitionPlan; readonly why: string }
  | { readonly kind: "fallthrough" }
  | { readonly kind: "done" }
  | { readonly kind: "failed"; readonly message: string };

/** What a stage runs with. */
export interface StageDeps {
  readonly conversation: Conversation;
  readonly tools: ToolClient;
  readonly link: SidecarClient;
  readonly transcript: Transcript;
  readonly providers: (provider: string, timeoutMs?: number) => ProviderLookup;
  readonly signal?: AbortSignal;
}

/**
 * The stage's system prompt: the blueprint's, then what this stage expects of the model. `perStageRun`: a runtime
 * adapter runs the client once per stage, so the model ends its turn after choosing (the sidecar's `next_stage`
 * has no DONE: where the stage may complete, ending the turn without a choice ends the run).
 */
export function buildSystemPrompt(plan: StagePlan, llmEdges: readonly TransitionPlan[], perStageRun = false): string {
  const done = !plan.allowComplete ? "" : perStageRun ? "\nIf no further stage is needed, end your turn without calling it: the run ends here." : `\n- ${DONE_CHOICE}: no further stage is needed; the run ends here`;
  const after = perStageRun ? "\nOnce it has answered, end your turn: the next stage starts afresh, with its own tools and instructions." : "";
  const parts = [plan.systemPrompt.trim()];
  parts.push(`You are in stage '${plan.name}'. Use the tools to do the work; every tool call is checked by a policy, and a refused call says why.`);
  if (plan.output) {
    const format = plan.output.format ? ` Format: ${plan.output.format}.` : "";
    parts.push(`When the answer is complete, call ${RESULT_TOOL} with it.${format}${plan.output.instructions ? ` ${plan.output.instructions}` : ""}`);
  }
  if (llmEdges.length > 0) {
    parts.push(`When this stage's work is done, call ${NEXT_STAGE_TOOL} with the stage to go to:\n${llmEdges.map((e) => `- ${e.to}${e.hint ? `: ${e.hint}` : ""}`).join("\n")}${done}${after}`);
  }
  return parts.filter((p) => p !== "").join("\n\n");
}


/** One turn from the first provider of the stage's list that answers; the failures of the others, named. */
async function completeWithFailover(plan: StagePlan, deps: StageDeps, request: Omit<Parameters<ModelProvider["complete"]>[0], "model">): Promise<ModelTurn> {
  const failures: string[] = [];
  for (const choice of plan.model.models) {
    const found = deps.providers(choice.provider, plan.model.timeoutMs);
    if (!found.ok) { failures.push(found.message); continue; }
    try {
      return await found.provider.complete({ ...request, model: choice.model }, deps.signal);
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      failures.push(`${choice.provider}/${choice.model}: ${err.message}`);
      if (plan.model.models.length > 1) deps.transcript.warn(`${choice.provider}/${choice.model} failed (${err.message}); trying the next model`);
    }
  }
  throw new ProviderError(failures.join("; "));
}

/** Runs one call and puts its outcome into the conversation; `fatal` when the sidecar failed closed. */
async function runCall(call: ToolCall, at: string, deps: StageDeps): Promise<{ submitted: boolean; fatal?: string }> {
  deps.transcript.line(`${at} → ${call.name} ${describeArgs(call.args)}`);
  const outcome = await deps.tools.callTool(call.id, call.name, call.args);
  if (outcome.failedClosed) {
    deps.transcript.line(`${at} ← ${call.name}: the sidecar failed closed (${outcome.code ?? "no code"}): ${outcome.content}`);
    return { submitted: false, fatal: `the sidecar failed closed on ${call.name} (${outcome.code ?? "no code"}): ${outcome.content}` };
  }
  if (outcome.decision === "deny") deps.transcript.line(`${at} ← ${call.name} refused (${outcome.code ?? "deny"}${outcome.source ? `, ${outcome.source}` : ""}): ${outcome.content}`);
  else {
    const label = outcome.label ? `, label ${outcome.label}, context taint ${outcome.taint}` : "";
    deps.transcript.line(`${at} ← ${call.name} ${outcome.decision === "allow" ? "ran in the sidecar" : "handed to the runtime"}: ${Buffer.byteLength(outcome.content)} bytes${outcome.isError ? " (an error)" : ""}${label}`);
  }
  deps.transcript.detail("result", outcome.content);
  deps.conversation.addToolResult(call, outcome.content, outcome.isError, outcome.entry);
  return { submitted: call.name === RESULT_TOOL && outcome.decision === "run" };
}

/** A stage being run: its plan and dependencies, its edges by condition, its prompt and the tools it offers. */
interface StageRun {
  readonly plan: StagePlan;
  readonly deps: StageDeps;
  readonly edges: readonly TransitionPlan[];
  readonly llmEdges: readonly TransitionPlan[];
  readonly system: string;
  readonly tools: readonly ToolSpec[];
}

/** Runs a stage until it ends. */
export async function runStage(plan: StagePlan, offered: readonly ToolSpec[], deps: StageDeps): Promise<StageEnd> {
  const edges = plan.transitions ?? [];
  const llmEdges = edges.filter((e) => e.condition === "llm_choice");
  const stage: StageRun = {
    plan, deps, edges, llmEdges,
    system: buildSystemPrompt(plan, llmEdges),
    tools: llmEdges.length > 0 ? [...offered, describeNextStageTool(llmEdges, plan.allowComplete ? { choice: DONE_CHOICE, hint: "no further stage is needed, the run ends here" } : undefined)] : [...offered],
  };
  for (let i = 1; i <= plan.maxIterations; i++) {
    const end = await runIteration(stage, `[${plan.name} ${i}/${plan.maxIterations}]`);
    if (end !== undefined) return end;
  }
  const onMax = edges.find((e) => e.condition === "max_iterations");
  if (onMax) return { kind: "transition", edge: onMax, why: `max_iterations (${plan.maxIterations}) reached` };
  return { kind: "failed", message: `stage '${plan.name}' reached its max_iterations (${plan.maxIterations})${plan.output ? " without submit_output" : ""}` };
}

/** One iteration: trim the context, ask the model, act on its reply; the stage's end, or undefined to go on. */
async function runIteration(stage: StageRun, at: string): Promise<StageEnd | undefined> {
  const { deps } = stage;
  const dropped = deps.conversation.trim();
  if (dropped.length > 0) {
    const r = await deps.link.evict(dropped);
    deps.transcript.line(`${at} context trimmed: ${r.evicted} entries evicted, context taint now ${r.taint}`);
  }
  const turn = await askModel(stage);
  if ("kind" in turn) return turn;
  const entry = deps.conversation.addAssistant(turn.text, turn.toolCalls);
  if (entry) await deps.link.label([{ ...entry, source: "model" }]);
  deps.transcript.line(`${at} model: ${Buffer.byteLength(turn.text)} bytes of text, ${turn.toolCalls.length} tool call(s), stop ${turn.stopReason}`);
  deps.transcript.detail("text", turn.text);
  return turn.toolCalls.length === 0 ? endWithoutCalls(stage) : runToolCalls(stage, turn.toolCalls, at);
}

/** The model's turn; a provider failure takes the stage's `error` edge, or fails it. */
async function askModel(stage: StageRun): Promise<ModelTurn | StageEnd> {
  const { plan, deps } = stage;
  try {
    return await completeWithFailover(plan, deps, { system: stage.system, messages: deps.conversation.messages(), tools: [...stage.tools], sampling: plan.model.sampling });
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    const onError = stage.edges.find((e) => e.condition === "error");
    if (onError) return { kind: "transition", edge: onError, why: `the model failed (${err.message})` };
    return { kind: "failed", message: `stage '${plan.name}': the model failed: ${err.message}` };
  }
}

/** A reply without tool calls: the `always` edge, a nudge to hand over the output or choose a stage (go on), or the stage's end. */
function endWithoutCalls(stage: StageRun): StageEnd | undefined {
  const { plan, deps, llmEdges } = stage;
  const always = stage.edges.find((e) => e.condition === "always");
  if (always) return { kind: "transition", edge: always, why: "the stage's work ended (condition always)" };
  if (plan.output) {
    deps.conversation.addUser(`Call ${RESULT_TOOL} with the final answer; the run ends only when it is handed over.`);
    return undefined;
  }
  if (llmEdges.length > 0 && plan.allowComplete) {
    deps.transcript.line(`[${plan.name}] the model picked no stage and the stage may complete (allow_complete): the run ends here`);
    return { kind: "done" };
  }
  if (llmEdges.length > 0) {
    deps.conversation.addUser(`Call ${NEXT_STAGE_TOOL} to go on (${llmEdges.map((e) => e.to).join(", ")}), or keep working with the tools.`);
    return undefined;
  }
  return plan.transitions === undefined ? { kind: "fallthrough" } : { kind: "done" };
}

/** The model's `next_stage` call: the edge it picked, DONE where the stage may complete, or undefined (told why). */
function chooseNext(stage: StageRun, call: ToolCall, at: string): TransitionPlan | "done" | undefined {
  const { deps, llmEdges, plan } = stage;
  const picked = call.args["stage"];
  const done = plan.allowComplete && picked === DONE_CHOICE;
  const chosen = done ? undefined : llmEdges.find((e) => e.to === picked);
  deps.transcript.line(`${at} → ${NEXT_STAGE_TOOL} ${describeArgs(call.args)}${chosen || done ? "" : " (not a transition of this stage)"}`);
  const choices = [...llmEdges.map((e) => e.to), ...(plan.allowComplete ? [DONE_CHOICE] : [])].join(", ");
  const answer = done ? "The run ends here." : chosen ? `Leaving for stage '${chosen.to}'.` : `[error] '${String(picked)}' is not a stage this one leads to (${choices})`;
  deps.conversation.addToolResult(call, answer, !done && chosen === undefined);
  return done ? "done" : chosen;
}

/** Runs the reply's tool calls in order: submitted, a chosen transition (or DONE), a fatal failure, or undefined to go on. */
async function runToolCalls(stage: StageRun, calls: readonly ToolCall[], at: string): Promise<StageEnd | undefined> {
  const { deps, llmEdges } = stage;
  let submitted = false;
  let chosen: TransitionPlan | "done" | undefined;
  for (const call of calls) {
    if (call.name === NEXT_STAGE_TOOL && llmEdges.length > 0) {
      chosen = chooseNext(stage, call, at);
      continue;
    }
    const r = await runCall(call, at, deps);
    if (r.fatal) return { kind: "failed", message: r.fatal };
    submitted ||= r.submitted;
  }
  if (submitted) return { kind: "submitted" };
  if (chosen === "done") return { kind: "done" };
  if (chosen) return { kind: "transition", edge: chosen, why: "the model chose it" };
  return undefined;
}
