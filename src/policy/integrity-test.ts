// `leviath policy test --integrity LEVEL --provenance ARG=LEVEL,…` (issue 40): the integrity gate's verdict for one
// call in a context of the given integrity, each named argument's value coming from text of the given integrity. The
// same evaluation as the live gate's, over a synthetic context; like the taint dry run it ignores permissions and modes.
import type { IntegrityLevel } from "../api/integrity-policy.ts";
import type { Provenance } from "./context-integrity.ts";
import { resolveIntegrityClassification } from "./integrity-classification.ts";
import { evaluateIntegrityGate, type IntegrityGatePolicy, type IntegrityOutcome, type IntegrityView } from "./integrity-gate.ts";
import { describeIntegrityChange, describeIntegrityHold } from "./integrity-messages.ts";
import type { OverrideTable } from "./classification.ts";
import type { Level } from "./levels.ts";
import { extractCallTargets, listTargetArguments, TARGETLESS_TOOLS, type ToolArgs } from "./targets.ts";

/** The dry run's inputs. */
export interface IntegrityTestInput {
  readonly tool: string;
  readonly args: ToolArgs;
  /** `--target` without `--args`: the call's one target. */
  readonly target?: string | undefined;
  readonly integrity: IntegrityLevel;
  /** Argument name to where its value came from (`none` when not named). */
  readonly provenance: Readonly<Record<string, Provenance>>;
  readonly taint: Level;
  readonly outbound: boolean;
  readonly overrides: OverrideTable;
  readonly checkTargets: boolean;
  readonly policy: Omit<IntegrityGatePolicy, "enforce">;
}

/** The dry run's answer, and the text it prints. */
export interface IntegrityTestResult {
  readonly effect: string;
  readonly outcome: IntegrityOutcome;
  readonly lines: readonly string[];
}

/** A context whose integrity is given and whose values come from where `--provenance` says. */
function buildView(input: IntegrityTestInput): IntegrityView {
  const byValue = new Map<string, Provenance>();
  for (const [name, p] of Object.entries(input.provenance)) {
    const value = input.args[name];
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) if (typeof v === "string" || typeof v === "number") byValue.set(String(v).toLowerCase(), p);
  }
  const entry = { region: "policy-test", entryId: "untrusted" };
  const lookup = (v: string): Provenance => {
    const lower = v.toLowerCase();
    for (const [value, p] of byValue) if (value === lower || (p === "untrusted" && value.includes(lower))) return p;
    return "none";
  };
  return {
    integrity: () => input.integrity,
    cause: () => (input.integrity === "untrusted" ? entry : undefined),
    provenanceOf: lookup,
    findUntrustedSource: (v) => (lookup(v) === "untrusted" ? entry : undefined),
  };
}

/** Runs the integrity gate for one call, as `policy test --integrity` does. */
export function computeIntegrityTest(input: IntegrityTestInput): IntegrityTestResult {
  const override = input.overrides.get(input.tool);
  const classification = resolveIntegrityClassification(input.tool, override, input.checkTargets);
  const outcome = evaluateIntegrityGate({
    tool: input.tool, classification, outbound: input.outbound, args: input.args, taint: input.taint,
    targets: input.target === undefined ? extractCallTargets(input.tool, input.args, override?.target) : { target: input.target, targets: [input.target] },
    targetArguments: listTargetArguments(input.tool, input.args, override?.target),
    targetless: TARGETLESS_TOOLS.has(input.tool),
    context: buildView(input), policy: { ...input.policy, enforce: true },
  });
  const v = outcome.verdict;
  const provenance = Object.entries(outcome.argsProvenance).map(([k, p]) => `${k}=${p}`).join(", ");
  const head = ["Integrity:", `  Effect: ${classification.effect}`, `  Context: ${input.integrity}`, ...(provenance === "" ? [] : [`  Provenance: ${provenance}`])];
  const result = v.kind === "pass"
    ? ["Result: NOT HELD"]
    : v.kind === "allowlist"
      ? [`Result: ALLOWED by integrity allowlist rule #${v.index + 1}`]
      : v.kind === "rule"
        ? [`Result: ALLOWED by integrity rule '${v.name}'`]
        : [`Result: HELD (${describeIntegrityHold(input.tool, v.finding)})`, `  To allow it: ${describeIntegrityChange(input.tool, v.finding.reason, v.finding.targets)}.`];
  return { effect: classification.effect, outcome, lines: [...head, ...result] };
}

/** Parses `--provenance ARG=LEVEL[,ARG=LEVEL…]` (LEVEL trusted, untrusted or none). */
export function parseProvenanceFlag(text: string | undefined): { ok: true; value: Record<string, Provenance> } | { ok: false; error: string } {
  const value: Record<string, Provenance> = {};
  if (text === undefined) return { ok: true, value };
  for (const part of text.split(",")) {
    const eq = part.indexOf("=");
    const name = part.slice(0, eq).trim();
    const level = part.slice(eq + 1).trim();
    if (eq <= 0 || (level !== "trusted" && level !== "untrusted" && level !== "none")) {
      return { ok: false, error: `Invalid provenance '${part}': use ARG=trusted, ARG=untrusted or ARG=none, comma-separated` };
    }
    value[name] = level;
  }
  return { ok: true, value };
}

/** Parses `--integrity` (trusted or untrusted). */
export function parseIntegrityFlag(text: string): { ok: true; value: IntegrityLevel } | { ok: false; error: string } {
  return text === "trusted" || text === "untrusted" ? { ok: true, value: text } : { ok: false, error: `Invalid integrity: '${text}'. Use: trusted, untrusted` };
}
