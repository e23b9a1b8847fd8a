// The gate's user-facing texts (taint-gate spec §3.6, §7), exact because they are observable: the
// model reads the block texts as tool results and people answer the prompt.
import { formatLevelCapitalised } from "./levels.ts";
import type { Level } from "./levels.ts";

/** The prompt's options, in upstream's order (index 0, 1, 2). */
export const GATE_PROMPT_OPTIONS = ["Allow once", "Allow for this session", "Deny"] as const;

/** The interaction source tag of a gate prompt. */
export const GATE_PROMPT_SOURCE = "taint_gate";

/** A multiple-choice prompt for a blocked call. */
export interface GatePrompt {
  /** `gate-<tool call id>`. */
  readonly requestId: string;
  readonly source: typeof GATE_PROMPT_SOURCE;
  readonly text: string;
  readonly options: readonly string[];
  /** Seconds after which the caller denies it; undefined waits forever. */
  readonly timeoutSeconds: number | undefined;
}

/** The tool result of a call blocked with nobody to ask. */
export function buildGateBlockMessage(tool: string, taint: Level, clearance: Level, sourceRegions: readonly string[]): string {
  const sources = sourceRegions.length === 0 ? "context" : sourceRegions.join(", ");
  return (
    `[blocked] Tool '${tool}' would send ${formatLevelCapitalised(taint)}-level data over a channel cleared only for ` +
    `${formatLevelCapitalised(clearance)} (tainted by: ${sources}). Add an allowlist rule with \`lev policy add\` to permit it.`
  );
}

/** The tool result of a call denied at the prompt or whose prompt expired (lower-case levels). */
export function buildGateDeniedMessage(tool: string, taint: Level, clearance: Level): string {
  return `[blocked] Tool '${tool}' would send data at ${taint} sensitivity, above its ${clearance} clearance. Denied by user.`;
}

/** The question asked at a gate prompt. */
export function buildGatePromptText(tool: string, taint: Level, clearance: Level): string {
  return (
    `Tool '${tool}' would send ${formatLevelCapitalised(taint)}-level data over a channel cleared only for ` +
    `${formatLevelCapitalised(clearance)}. Allow it?`
  );
}

/** A prompt's expiry: a positive number of seconds, or undefined (0 means wait forever). */
export function toPromptTimeout(seconds: number): number | undefined {
  return seconds > 0 ? seconds : undefined;
}

/** Builds the prompt for a blocked call. */
export function buildGatePrompt(input: {
  readonly callId: string;
  readonly tool: string;
  readonly taint: Level;
  readonly clearance: Level;
  readonly timeoutSeconds: number;
}): GatePrompt {
  return {
    requestId: `gate-${input.callId}`,
    source: GATE_PROMPT_SOURCE,
    text: buildGatePromptText(input.tool, input.taint, input.clearance),
    options: GATE_PROMPT_OPTIONS,
    timeoutSeconds: toPromptTimeout(input.timeoutSeconds),
  };
}
