// The whole run: wait for the sidecar, label the task and inputs, then the stages in the order the blueprint's
// transitions take them, each entered with POST /v1/stage before its first tool call. Returns the exit code of
// docs/runtime.md and the message for the termination log (which reaches the Run's Completed condition).
import { MAX_ENTRY_TEXT_CHARS } from "../../api/sidecar-contract.ts";
import { findFallThroughStage } from "../../policy/stage-order.ts";
import { Conversation } from "./conversation.ts";
import type { ProviderLookup } from "./provider-registry.ts";
import type { SidecarClient } from "../sidecar-client.ts";
import { fillRegions } from "./region-fill.ts";
import { runStage, type StageEnd } from "./stage-loop.ts";
import type { RunPlan, StagePlan } from "./stage-plan.ts";
import type { ToolClient } from "./tool-client.ts";
import type { Transcript } from "./transcript.ts";

/** Exit codes of `leviath agent` (docs/runtime.md). */
export const AGENT_EXIT = { succeeded: 0, failed: 1, usage: 2, spawn: 3 } as const;

/** The region the task lands in (upstream's `task` region); inputs land in a region named after each. */
export const TASK_REGION = "task";

/** How a run ended. */
export interface AgentOutcome {
  readonly exitCode: number;
  /** For the termination log: what happened, then the settings that were not honoured. */
  readonly message: string;
}

/** What a run needs. */
export interface AgentRunDeps {
  readonly plan: RunPlan;
  readonly task: string | undefined;
  readonly inputs: Readonly<Record<string, string>>;
  readonly link: SidecarClient;
  readonly tools: ToolClient;
  readonly providers: (provider: string, timeoutMs?: number) => ProviderLookup;
  readonly transcript: Transcript;
  readonly conversation?: Conversation;
  readonly signal?: AbortSignal;
}

/** The first user message: the task and the inputs, as the caller gave them. */
export function buildTaskMessage(task: string | undefined, inputs: Readonly<Record<string, string>>): string {
  const lines = [`Task: ${task ?? "(none given)"}`];
  const names = Object.keys(inputs).sort();
  if (names.length > 0) lines.push("", "Inputs:", ...names.map((n) => `- ${n}: ${inputs[n]}`));
  return lines.join("\n");
}

function finish(exitCode: number, what: string, warnings: readonly string[]): AgentOutcome {
  const ignored = warnings.length === 0 ? "" : `; not honoured: ${warnings.join("; ")}`;
  return { exitCode, message: `${what}${ignored}` };
}

/**
 * Tells the sidecar what this runtime does not honour, so the Run's status shows it while the run goes on. Only
 * informative: a sidecar that does not take them (an older one answers 404) is noted in the transcript, and the run
 * goes on.
 */
async function reportWarnings(link: AgentRunDeps["link"], warnings: readonly string[], transcript: AgentRunDeps["transcript"]): Promise<void> {
  if (warnings.length === 0) return;
  try {
    await link.reportWarnings(warnings.slice(0, 256));
  } catch (err) {
    transcript.warn(`the sidecar did not take the runtime's warnings: ${(err as Error).message}`);
  }
}

/** Runs the plan's stages; never throws for a model's or a sidecar's failure (those are exit 1). */
export async function runAgent(deps: AgentRunDeps): Promise<AgentOutcome> {
  const { plan, transcript, link } = deps;
  const conversation = deps.conversation ?? new Conversation();
  for (const w of plan.warnings) transcript.warn(w);
  await reportWarnings(link, plan.warnings, transcript);
  try {
    const task = buildTaskMessage(deps.task, deps.inputs);
    conversation.addUser(task, { region: TASK_REGION, id: TASK_REGION });
    const inputEntries = Object.keys(deps.inputs).map((name) => ({ region: name, id: name, source: "input" as const }));
    // The task's text is the trusted text argument provenance looks values up in (cut to what the sidecar takes).
    await link.label([{ region: TASK_REGION, id: TASK_REGION, source: "input", text: task.slice(0, MAX_ENTRY_TEXT_CHARS) }, ...inputEntries]);
    const filled = await fillRegions(plan.regions, { link, conversation, transcript });
    if (!filled.ok) return finish(AGENT_EXIT.spawn, filled.message, plan.warnings);
    return await runStages({ ...deps, conversation }, filled.regions);
  } catch (err) {
    const message = `${(err as Error).name === "SidecarLinkError" ? "" : "internal error: "}${(err as Error).message}`;
    transcript.line(`[run] failed: ${message}`);
    return finish(AGENT_EXIT.failed, message, plan.warnings);
  } finally {
    await deps.tools.close().catch(() => undefined);
  }
}

type RunDeps = AgentRunDeps & { readonly conversation: Conversation };

/** The stages from the entry, in the order their ends take them, each entered at most `1 + max_revisits` times. */
async function runStages(deps: RunDeps, filledRegions: readonly string[]): Promise<AgentOutcome> {
  const { plan, transcript } = deps;
  const byName = new Map(plan.stages.map((s) => [s.name, s]));
  const visits = new Map<string, number>();
  let stage: StagePlan | undefined = byName.get(plan.entry);
  let first = true;
  while (stage !== undefined) {
    const seen = (visits.get(stage.name) ?? 0) + 1;
    visits.set(stage.name, seen);
    if (seen > 1 + stage.maxRevisits) return finish(AGENT_EXIT.failed, `stage '${stage.name}' entered more than ${1 + stage.maxRevisits} times (max_revisits ${stage.maxRevisits})`, plan.warnings);
    const end = await enterAndRunStage(deps, stage, first);
    first = false;
    if (end.kind === "submitted") {
      transcript.line(`[run] output submitted in stage '${stage.name}': the run succeeded`);
      return finish(AGENT_EXIT.succeeded, `output submitted in stage '${stage.name}'`, plan.warnings);
    }
    if (end.kind === "failed") {
      transcript.line(`[run] failed: ${end.message}`);
      return finish(AGENT_EXIT.failed, end.message, plan.warnings);
    }
    stage = await followStageEnd(deps, { stage, end, filledRegions, byName });
  }
  const outputStages = plan.stages.filter((s) => s.output !== undefined).map((s) => s.name);
  if (outputStages.length > 0) return finish(AGENT_EXIT.failed, `the run ended without submit_output (output stage: ${outputStages.join(", ")})`, plan.warnings);
  transcript.line("[run] the last stage ended: the run succeeded");
  return finish(AGENT_EXIT.succeeded, "the last stage ended", plan.warnings);
}

/** Enters the stage at the sidecar, offers its tools and runs it to its end. */
async function enterAndRunStage(deps: RunDeps, stage: StagePlan, first: boolean): Promise<StageEnd> {
  const { link, transcript, conversation } = deps;
  const entered = await link.enterStage(stage.name);
  transcript.line(`[run] stage '${stage.name}' (index ${entered.index}): model ${stage.model.models.map((m) => `${m.provider}/${m.model}`).join(", ")}, max_iterations ${stage.maxIterations}`);
  if (!first) conversation.addUser(`Stage '${stage.name}' begins.`);
  const offered = await deps.tools.listTools(stage);
  transcript.line(`[run] tools offered: ${offered.map((t) => t.name).join(", ") || "none"}`);
  const unexecuted = (stage.toolNames ?? []).filter((n) => !offered.some((t) => t.name === n));
  if (unexecuted.length > 0) transcript.line(`[run] not offered, nothing executes them (neither the sidecar nor an MCP server of the policy): ${unexecuted.join(", ")}`);
  return runStage(stage, offered, { conversation, tools: deps.tools, link, transcript, providers: deps.providers, ...(deps.signal ? { signal: deps.signal } : {}) });
}

/** The stage a stage's end leads to (none: the run ends): the transition's target, clearing context if it says so, or the next in order. */
async function followStageEnd(deps: RunDeps, at: { stage: StagePlan; end: Exclude<StageEnd, { kind: "submitted" | "failed" }>; filledRegions: readonly string[]; byName: ReadonlyMap<string, StagePlan> }): Promise<StagePlan | undefined> {
  const { plan, transcript, conversation, link } = deps;
  const { stage, end } = at;
  switch (end.kind) {
    case "transition": {
      transcript.line(`[run] transition ${stage.name} → ${end.edge.to}: ${end.why}`);
      if (end.edge.clear) {
        const dropped = conversation.clear(new Set([TASK_REGION, ...Object.keys(deps.inputs), ...at.filledRegions]));
        if (dropped.length > 0) {
          const r = await link.evict(dropped);
          transcript.line(`[run] context cleared: ${r.evicted} entries evicted, context taint now ${r.taint}`);
        }
      }
      return at.byName.get(end.edge.to);
    }
    case "fallthrough": return findFallThroughStage(plan.stages, plan.stages.indexOf(stage));
    case "done": return undefined;
    default: {
      const unknown: never = end;
      throw new Error(`unknown stage end ${JSON.stringify(unknown)}`);
    }
  }
}
