// `lev policy test`, `lev policy list` and `lev policy add` (taint-gate spec §8) as data and text.
// The dry run uses the same verdict function as the live gate, with one synthetic region at the
// given taint; unlike the live gate it ignores permissions, modes, session raises and grant bumps.
import type { AllowlistRule } from "./allowlist.ts";
import { compareRuleNames } from "./cel-rules.ts";
import type { CompiledRuleSet, RuleDiagnostic } from "./cel-rules.ts";
import { resolveToolClassification } from "./classification.ts";
import type { ClassificationOverride, Direction, OverrideTable, PolicyWarning } from "./classification.ts";
import { decideGateVerdict } from "./gate.ts";
import { parseLevel } from "./levels.ts";
import type { Level } from "./levels.ts";
import { extractCallTargets, type ToolArgs } from "./targets.ts";

/** `lev policy test` inputs; `taint` defaults to private. */
export interface PolicyTestInput {
  readonly tool: string;
  readonly target?: string | undefined;
  /** The call's arguments: the targets are then extracted from them as the live gate does, and rules see `args`. */
  readonly args?: ToolArgs | undefined;
  readonly taint?: Level;
  readonly allowlist: readonly AllowlistRule[];
  readonly overrides: OverrideTable;
  readonly rules: CompiledRuleSet;
}

/** Which step decided the dry run. */
export type PolicyTestSource = "not-outbound" | "within-clearance" | "allowlist" | "rule" | "none";

/** The dry run's answer. */
export interface PolicyTestResult {
  readonly tool: string;
  readonly sensitivity: Level;
  readonly direction: Direction;
  readonly clearance: Level;
  readonly taint: Level;
  readonly target?: string;
  /** Every target, when the arguments named more than one. */
  readonly targets?: readonly string[];
  readonly result: "allowed" | "blocked";
  readonly source: PolicyTestSource;
  /** The allowlist rule's 1-based number, or the CEL rule's name. */
  readonly rule?: number | string;
  readonly warnings: readonly PolicyWarning[];
  readonly ruleDiagnostics: readonly RuleDiagnostic[];
}

/** Runs the gate's verdict for one tool at one taint, as `lev policy test` does. */
export function computePolicyTest(input: PolicyTestInput): PolicyTestResult {
  const taint = input.taint ?? "private";
  const { classification, warnings } = resolveToolClassification(input.tool, { overrides: input.overrides, sessionRaises: new Set() });
  const declared = input.overrides.get(input.tool)?.target;
  const { target, targets } = input.args === undefined
    ? { target: input.target, targets: input.target === undefined ? [] : [input.target] }
    : extractCallTargets(input.tool, input.args, declared);
  const { verdict, ruleDiagnostics } = decideGateVerdict({
    tool: input.tool, classification, taint, target, targets, args: input.args, allowlist: input.allowlist, rules: input.rules,
  });
  const base = {
    tool: input.tool,
    ...classification,
    taint,
    ...(target === undefined ? {} : { target }),
    ...(targets.length > 1 ? { targets } : {}),
    warnings,
    ruleDiagnostics,
  };
  switch (verdict.kind) {
    case "not-outbound":
    case "within-clearance":
      return { ...base, result: "allowed", source: verdict.kind };
    case "allowlist":
      return { ...base, result: "allowed", source: "allowlist", rule: verdict.index + 1 };
    case "rule":
      return { ...base, result: "allowed", source: "rule", rule: verdict.name };
    case "blocked":
      return { ...base, result: "blocked", source: "none" };
  }
}

function resultLines(r: PolicyTestResult): string[] {
  switch (r.source) {
    case "allowlist": return [`Result: ALLOWED by allowlist rule #${String(r.rule)}`];
    case "rule": return [`Result: ALLOWED by scripted rule '${String(r.rule)}'`];
    case "not-outbound": return ["Result: ALLOWED (tool is not outbound - no gate check needed)"];
    case "within-clearance": return [`Result: ALLOWED (taint ${r.taint} <= clearance ${r.clearance})`];
    case "none":
      return [
        `Gate fires: taint ${r.taint} > clearance ${r.clearance}`,
        "Result: BLOCKED (no allowlist or scripted rule matched)",
        "  The user would be prompted to allow/deny.",
      ];
  }
}

/** The dry run as upstream prints it (lower-case levels, one trailing newline). */
export function renderPolicyTest(r: PolicyTestResult): string {
  const lines = [
    `Tool: ${r.tool}`,
    `  Sensitivity: ${r.sensitivity}`,
    `  Direction: ${r.direction}`,
    `  Clearance: ${r.clearance}`,
    "",
    "Test scenario:",
    `  Taint level: ${r.taint}`,
    ...(r.target === undefined ? [] : [`  Target: ${r.target}`]),
    ...(r.targets === undefined ? [] : [`  Targets: ${r.targets.join(", ")}`]),
    "",
    ...resultLines(r),
  ];
  return `${lines.join("\n")}\n`;
}

/** A parse result for a CLI flag. */
export type FlagResult = { readonly ok: true; readonly value: Level } | { readonly ok: false; readonly error: string };

function parseLevelFlag(what: "taint" | "sensitivity", text: string): FlagResult {
  const value = parseLevel(text);
  return value === undefined ? { ok: false, error: `Invalid ${what} level: '${text}'. Use: public, internal, private` } : { ok: true, value };
}

/** `--taint` of `policy test` (default private). */
export function parseTaintFlag(text: string = "private"): FlagResult {
  return parseLevelFlag("taint", text);
}

/** `--max-sensitivity` of `policy add` (default internal). */
export function parseSensitivityFlag(text: string = "internal"): FlagResult {
  return parseLevelFlag("sensitivity", text);
}

/** The rule `policy add` appends: `to` is the target pattern or empty, `channel` always empty. */
export function buildPolicyAddRule(tool: string, maxSensitivity: Level, target?: string): AllowlistRule {
  return { tool, to: target === undefined ? [] : [target], channel: [], maxSensitivity };
}

/** `policy add`'s output once the file is saved; the level is echoed as the user typed it. */
export function renderPolicyAdded(input: { tool: string; maxSensitivityText: string; target?: string | undefined; path: string }): string {
  const lines = [`Added rule: ${input.tool} [max: ${input.maxSensitivityText}]`];
  if (input.target !== undefined) lines.push(`  Target: ${input.target}`);
  lines.push(`Saved to: ${input.path}`);
  return `${lines.join("\n")}\n`;
}

/** A rule file for `policy list`. */
export interface RuleFile {
  /** The file stem, which is the rule's name. */
  readonly name: string;
  readonly path: string;
}

/** What `policy list` shows; `ruleFiles` undefined means there is no rules directory. */
export interface PolicyListInput {
  readonly allowlist: readonly AllowlistRule[];
  readonly ruleFiles: readonly RuleFile[] | undefined;
  readonly overrides: ReadonlyMap<string, ClassificationOverride>;
}

function ruleTargets(rule: AllowlistRule): string {
  if (rule.to.length > 0) return rule.to.join(", ");
  if (rule.channel.length > 0) return rule.channel.join(", ");
  return "(any target)";
}

function overrideFields(o: ClassificationOverride): string {
  const parts: string[] = [];
  if (o.sensitivity !== undefined) parts.push(`sensitivity=${o.sensitivity}`);
  if (o.direction !== undefined) parts.push(`direction=${o.direction}`);
  if (o.clearance !== undefined) parts.push(`clearance=${o.clearance}`);
  if (o.target !== undefined) parts.push(`target=${o.target.kind === "url_host" ? "host of " : ""}${o.target.arguments.join("|")}`);
  return parts.join(", ");
}

/** `policy list` as upstream prints it; rule files in evaluation (name) order, overrides by key. */
export function renderPolicyList(input: PolicyListInput): string {
  const lines = ["Taint Policy Rules", "==================", ""];
  if (input.allowlist.length === 0) lines.push("No static allowlist rules configured.");
  else {
    lines.push(`Static Rules (${input.allowlist.length}):`);
    input.allowlist.forEach((rule, i) => lines.push(`  ${i + 1}. ${rule.tool} [max: ${rule.maxSensitivity}] → ${ruleTargets(rule)}`));
  }
  lines.push("");
  if (input.ruleFiles === undefined) lines.push("No scripted rules directory found.");
  else if (input.ruleFiles.length === 0) lines.push("No scripted rules found.");
  else {
    lines.push(`Scripted Rules (${input.ruleFiles.length}):`);
    for (const f of [...input.ruleFiles].sort((a, b) => compareRuleNames(a.name, b.name))) lines.push(`  - ${f.name} (${f.path})`);
  }
  if (input.overrides.size > 0) {
    lines.push("", `MCP Tool Overrides (${input.overrides.size}):`);
    for (const key of [...input.overrides.keys()].sort(compareRuleNames)) lines.push(`  ${key} [${overrideFields(input.overrides.get(key)!)}]`);
  }
  return `${lines.join("\n")}\n`;
}
