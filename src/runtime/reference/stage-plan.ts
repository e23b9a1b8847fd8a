// What the runtime does in each stage, read once from the blueprint (the Agent's spec as the controller pinned it):
// the prompt, the model, the iteration budget, the tools and where the stage may go next. Keys of upstream's
// that this runtime does not implement are listed as warnings, so the Run's status says what was not honoured.
import { computeEffectiveStages, type AgentSpec } from "../../api/agent.ts";
import { parseModelOverride, resolveModelSettings, type ModelChoice, type ModelSettings } from "./model-settings.ts";
import { buildRegionSeedPlans, type RegionSeedPlan } from "./region-seeds.ts";
import { parseTransitions, type TransitionPlan } from "../../policy/stage-transitions.ts";

/** Upstream's `[limits] default_max_iterations`: a stage that leaves it unset or 0 gets this. */
export const DEFAULT_MAX_ITERATIONS = 50;
/** How often a stage may be entered again after its first visit, unless it sets `max_revisits`. */
export const DEFAULT_MAX_REVISITS = 3;

/** Stage keys this runtime acts on; every other key of `runtime` is reported as ignored. */
export const HONOURED_STAGE_KEYS = ["mode", "model", "max_iterations", "max_revisits", "system_prompt", "transitions", "output", "description", "require_output", "allow_complete"] as const;
/** One stage as the runtime runs it. */
export interface StagePlan {
  readonly name: string;
  readonly mode: string;
  readonly systemPrompt: string;
  readonly maxIterations: number;
  readonly maxRevisits: number;
  /** Absent (`undefined`): fall through to the next declared stage. Empty: terminal. */
  readonly transitions: readonly TransitionPlan[] | undefined;
  /** Output stages end the run with `submit_output`. */
  readonly output: { readonly format?: string; readonly instructions?: string } | undefined;
  /** The names the stage offers (`available_tools` and `required_tools`), or undefined for the default set. */
  readonly toolNames: readonly string[] | undefined;
  readonly model: ModelSettings;
  /**
   * `allow_complete` (an output stage's default): where the model picks the next stage, it may also answer DONE and
   * end the run here, and a reply that picks nothing ends it rather than being nudged (upstream's rule).
   */
  readonly allowComplete: boolean;
}

/** The whole plan: stages in declaration order, the entry stage, and what was not honoured. */
export interface RunPlan {
  readonly stages: readonly StagePlan[];
  readonly entry: string;
  /** Regions filled at spawn through the sidecar, before the entry stage's model loop. */
  readonly regions: readonly RegionSeedPlan[];
  readonly warnings: readonly string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function positiveInt(v: unknown, fallback: number, where: string, warnings: string[]): number {
  if (v === undefined || v === 0) return fallback;
  if (typeof v === "number" && Number.isInteger(v) && v > 0) return v;
  warnings.push(`${where}: not a positive integer; ${fallback} is used`);
  return fallback;
}

/** One stage's plan from its `runtime` table (at `where`); what is not honoured goes to `warnings`. */
function buildStagePlan(stage: ReturnType<typeof computeEffectiveStages>[number], where: string, ctx: { names: ReadonlySet<string>; override: ModelChoice | undefined; warnings: string[] }): StagePlan {
  const { warnings } = ctx;
  const rt = stage.runtime ?? {};
  for (const key of Object.keys(rt)) if (!(HONOURED_STAGE_KEYS as readonly string[]).includes(key)) warnings.push(`${where}.${key}: ignored by leviath agent`);
  const mode = str(rt["mode"]) ?? "autonomous";
  if (mode !== "autonomous" && mode !== "output") warnings.push(`${where}.mode: '${mode}' runs as 'autonomous'`);
  const isOutput = mode === "output" || rt["require_output"] === true;
  return {
    name: stage.name,
    mode,
    systemPrompt: str(rt["system_prompt"]) ?? "",
    maxIterations: positiveInt(rt["max_iterations"], DEFAULT_MAX_ITERATIONS, `${where}.max_iterations`, warnings),
    maxRevisits: positiveInt(rt["max_revisits"], DEFAULT_MAX_REVISITS, `${where}.max_revisits`, warnings),
    transitions: parseTransitions(rt["transitions"], `${where}.transitions`, ctx.names, warnings),
    output: isOutput ? buildOutputPlan(rt["output"]) : undefined,
    toolNames: stage.availableTools ? [...new Set([...stage.availableTools, ...(stage.requiredTools ?? [])])] : undefined,
    model: resolveModelSettings(rt["model"], `${where}.model`, ctx.override, warnings),
    allowComplete: readAllowComplete(rt["allow_complete"], mode === "output", `${where}.allow_complete`, warnings),
  };
}

/** `allow_complete`: a boolean, or the mode's default (true for an output stage, as upstream). */
function readAllowComplete(v: unknown, isOutputMode: boolean, where: string, warnings: string[]): boolean {
  if (v === undefined) return isOutputMode;
  if (typeof v === "boolean") return v;
  warnings.push(`${where}: not a boolean; ${String(isOutputMode)} is used`);
  return isOutputMode;
}

/** Upstream's lint `allow-complete-skips-output`: a stage that may end the run before the blueprint's output stage. */
function warnEarlyEnds(plans: readonly StagePlan[], warnings: string[]): void {
  const outputs = plans.filter((p) => p.output !== undefined).map((p) => p.name);
  if (outputs.length === 0) return;
  plans.forEach((p, i) => {
    if (p.allowComplete && p.output === undefined) {
      warnings.push(`stages[${i}].runtime.allow_complete: the model may end the run in stage '${p.name}' and never reach the output stage (${outputs.join(", ")}); such a run fails without submit_output`);
    }
  });
}

/** An output stage's `output` table: its format and instructions, when given as strings. */
function buildOutputPlan(raw: unknown): NonNullable<StagePlan["output"]> {
  const table = isRecord(raw) ? raw : undefined;
  const format = str(table?.["format"]);
  const instructions = str(table?.["instructions"]);
  return { ...(format ? { format } : {}), ...(instructions ? { instructions } : {}) };
}

/** The run plan of an Agent spec, with the Run's `runtime` values (`model: "provider/model"` overrides every stage). */
export function buildRunPlan(spec: AgentSpec, runRuntime: Record<string, unknown> | undefined): RunPlan {
  const warnings: string[] = [];
  const stages = computeEffectiveStages(spec);
  const names = new Set(stages.map((s) => s.name));
  const overrideText = str(runRuntime?.["model"]);
  const override = overrideText === undefined ? undefined : parseModelOverride(overrideText);
  if (overrideText !== undefined && override === undefined) warnings.push(`run.runtime.model: '${overrideText}' is not provider/model; ignored`);
  const plans = stages.map((stage, i) => buildStagePlan(stage, `stages[${i}].runtime`, { names, override, warnings }));
  warnEarlyEnds(plans, warnings);
  const regions = buildRegionSeedPlans(spec, warnings);
  return { stages: plans, entry: spec.agent.entryStage ?? plans[0]!.name, regions, warnings };
}
