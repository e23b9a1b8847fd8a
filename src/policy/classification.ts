// Tool classification (taint-gate spec §2): which label a tool's results carry, whether the tool can
// send data out, and the highest taint it may run under. Lookup is by exact, case-sensitive name; a
// name we do not know is treated as outbound with public clearance, so a new MCP or script tool is
// gated until someone classifies it (fail closed).
import { BUILTIN_TOOL_SPELLINGS, findBuiltinTool, listToolSpellings, type Direction, type ToolClassification } from "../api/tools.ts";
import { maxLevel, parseLevel } from "./levels.ts";
import type { Level } from "./levels.ts";
import type { ToolTargetRule } from "./targets.ts";
import type { IntegrityLevel, ToolEffect } from "../api/integrity-policy.ts";

/** A tool's direction and `(sensitivity, direction, clearance)`: declared once, in api/tools.ts. */
export type { Direction, ToolClassification };

/** A classification override (`[mcp_overrides]`): only the fields that are set replace the current ones. */
export interface ClassificationOverride {
  readonly sensitivity?: Level;
  /** Kept raw, as upstream does: an unrecognised word is ignored (with a warning) when applied. */
  readonly direction?: string;
  readonly clearance?: Level;
  /** The arguments that name where a call of the tool acts (policy/targets.ts); never set for a built-in tool. */
  readonly target?: ToolTargetRule;
  /** Who could have written what the tool returns (policy/integrity-classification.ts). */
  readonly integrity?: IntegrityLevel;
  /** What a call does: read, own, reach (policy/integrity-classification.ts). */
  readonly effect?: ToolEffect;
  /** Its targets are checked at any taint. */
  readonly checkTargets?: boolean;
}

/** Overrides keyed by the dispatched tool name. */
export type OverrideTable = ReadonlyMap<string, ClassificationOverride>;

/** Something worth telling the operator that did not stop the policy from loading. */
export interface PolicyWarning {
  readonly tool: string;
  readonly message: string;
}

/** A classification together with the warnings produced while resolving it. */
export interface ResolvedClassification {
  readonly classification: ToolClassification;
  readonly warnings: readonly PolicyWarning[];
}

function cls(sensitivity: Level, direction: Direction, clearance: Level): ToolClassification {
  return Object.freeze({ sensitivity, direction, clearance });
}

/** What an unknown tool (any MCP `server__tool`, any script tool, any other name) is treated as. */
export const UNKNOWN_TOOL_CLASSIFICATION: ToolClassification = cls("public", "outbound", "public");

/** The built-in classification table (upstream's newer table, PR #707), keyed by exact tool name (aliases included). */
export const BUILTIN_CLASSIFICATIONS: ReadonlyMap<string, ToolClassification> = new Map(
  BUILTIN_TOOL_SPELLINGS.map((name) => [name, findBuiltinTool(name)!.classification] as const),
);

/** The tools whose results an active read-path grant raises to private (read-paths spec §6 step 5). */
export const READ_TOOLS: readonly string[] = listToolSpellings((e) => e.metricClass === "file_read");

/** The built-in classification of a tool, or the fail-closed unknown classification. */
export function classifyBuiltinTool(tool: string): ToolClassification {
  return BUILTIN_CLASSIFICATIONS.get(tool) ?? UNKNOWN_TOOL_CLASSIFICATION;
}

/** Parses a direction case-insensitively (as upstream); anything else is undefined. */
export function parseDirection(text: string): Direction | undefined {
  const lower = text.toLowerCase();
  return lower === "inbound" || lower === "internal" || lower === "outbound" ? lower : undefined;
}

/** Applies an override: set fields replace, an unrecognised direction keeps the old one and warns. */
export function applyClassificationOverride(
  tool: string,
  base: ToolClassification,
  override: ClassificationOverride,
): ResolvedClassification {
  const warnings: PolicyWarning[] = [];
  let direction = base.direction;
  if (override.direction !== undefined) {
    const parsed = parseDirection(override.direction);
    if (parsed === undefined) {
      warnings.push({
        tool,
        message: `[mcp_overrides] ${tool}: unrecognised direction '${override.direction}' ignored; keeping '${base.direction}'`,
      });
    } else {
      direction = parsed;
    }
  }
  return {
    classification: cls(override.sensitivity ?? base.sensitivity, direction, override.clearance ?? base.clearance),
    warnings,
  };
}

/** Inputs that change a tool's classification beyond the built-in table. */
export interface ClassificationPolicy {
  readonly overrides: OverrideTable;
  /** Tools whose clearance "Allow for this session" raised to private, by exact name. */
  readonly sessionRaises: ReadonlySet<string>;
}

/** The classification the gate uses: built-in or unknown, then the override, then a session raise. */
export function resolveToolClassification(tool: string, policy: ClassificationPolicy): ResolvedClassification {
  const base = classifyBuiltinTool(tool);
  const override = policy.overrides.get(tool);
  const resolved = override === undefined ? { classification: base, warnings: [] } : applyClassificationOverride(tool, base, override);
  if (!policy.sessionRaises.has(tool)) return resolved;
  // The raise wins over an overridden clearance but keeps the other (possibly overridden) fields.
  return { classification: cls(resolved.classification.sensitivity, resolved.classification.direction, "private"), warnings: resolved.warnings };
}

/** Inputs of the per-agent result-label table. */
export interface ResultLabelInputs {
  /** The tools offered to the agent; only these get an entry. */
  readonly tools: Iterable<string>;
  readonly overrides: OverrideTable;
  /** Taint tracking on for the agent; off means every result is public (no table at all). */
  readonly taintTracking: boolean;
  /** The agent has an active read-path grant (read-paths spec §6 step 5). */
  readonly readGrantActive: boolean;
}

/** Per-agent tool-name to result-label table, computed once when the agent starts. */
export function buildResultLabelTable(inputs: ResultLabelInputs): ReadonlyMap<string, Level> {
  const table = new Map<string, Level>();
  if (!inputs.taintTracking) return table;
  for (const tool of inputs.tools) {
    const base = classifyBuiltinTool(tool);
    const override = inputs.overrides.get(tool);
    const sensitivity = override?.sensitivity ?? base.sensitivity;
    // The bump keys on "some grant exists", so it covers reads inside the workdir too.
    const bumped = inputs.readGrantActive && READ_TOOLS.includes(tool) ? maxLevel(sensitivity, "private") : sensitivity;
    table.set(tool, bumped);
  }
  return table;
}

/** The label for a result of `tool`: its table entry, or public for a name the table lacks. */
export function lookupResultLabel(table: ReadonlyMap<string, Level>, tool: string): Level {
  return table.get(tool) ?? "public";
}

/** The raw shape of one override as read from a file (levels still text). */
export interface RawOverrideFields {
  readonly sensitivity?: string;
  readonly direction?: string;
  readonly clearance?: string;
}

/** Parses raw override fields; an unreadable level is left unset (never defaulted) and reported. */
export function parseClassificationOverride(tool: string, raw: RawOverrideFields): ResolvedOverride {
  const warnings: PolicyWarning[] = [];
  const level = (field: "sensitivity" | "clearance"): Level | undefined => {
    const text = raw[field];
    if (text === undefined) return undefined;
    const parsed = parseLevel(text);
    if (parsed === undefined) warnings.push({ tool, message: `[mcp_overrides] ${tool}: unreadable ${field} '${text}' ignored` });
    return parsed;
  };
  const sensitivity = level("sensitivity");
  const clearance = level("clearance");
  const override: ClassificationOverride = {
    ...(sensitivity === undefined ? {} : { sensitivity }),
    ...(raw.direction === undefined ? {} : { direction: raw.direction }),
    ...(clearance === undefined ? {} : { clearance }),
  };
  return { override, warnings };
}

/** A parsed override and the warnings it produced. */
export interface ResolvedOverride {
  readonly override: ClassificationOverride;
  readonly warnings: readonly PolicyWarning[];
}
