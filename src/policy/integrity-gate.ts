// The integrity gate (issue 40, DESIGN.md §4): may this context choose this action? Beside the taint gate (may this
// data leave here), and pure like it. An acting call (its classification's effect is `own` or `reach`) is held when a
// target it names came only from untrusted text (argument provenance, whatever the context's taint), or when the
// context is untrusted; a call whose targets are checked at any taint is held when no allowlist rule names them. A
// held call may be allowed by the untrusted-context allowlist (never one with a target from untrusted text) or by an
// integrity CEL rule; otherwise the caller applies the policy's `onHold` and the run's mode.
import type { IntegrityLevel } from "../api/integrity-policy.ts";
import { isAllowlistRuleMatch, isTargetPatternMatch, type AllowlistRule } from "./allowlist.ts";
import { evaluateRules, type CompiledRuleSet, type RuleDiagnostic } from "./cel-rules.ts";
import type { Provenance, UntrustedEntry } from "./context-integrity.ts";
import { findIdentityTokens, MAX_IDENTITY_TOKENS, MAX_TOKEN_SCAN_CHARS } from "./identity-tokens.ts";
import { isActing, type IntegrityClassification } from "./integrity-classification.ts";
import type { Level } from "./levels.ts";
import type { CallTargets, ToolArgs } from "./targets.ts";

/** Why a call is held. */
export const HOLD_REASONS = ["untrusted-target", "untrusted-context", "unlisted-target"] as const;
/** Why a call is held (a closed set: a metric label). */
export type HoldReason = (typeof HOLD_REASONS)[number];

/** Most argument values (leaves) a call's provenance is computed over; past it every argument counts as untrusted. */
export const MAX_PROVENANCE_VALUES = 64;

/** The context as the integrity gate needs it (a `ContextIntegrity` satisfies this). */
export interface IntegrityView {
  integrity(): IntegrityLevel;
  cause(): UntrustedEntry | undefined;
  provenanceOf(value: string): Provenance;
  findUntrustedSource(value: string): UntrustedEntry | undefined;
}

/** The integrity gate's policy. */
export interface IntegrityGatePolicy {
  readonly enforce: boolean;
  /** Calls allowed under an untrusted context. */
  readonly allowlist: readonly AllowlistRule[];
  /** The taint gate's allowlist: its target patterns also list a target for `checkTargets`. */
  readonly taintAllowlist: readonly AllowlistRule[];
  readonly rules: CompiledRuleSet;
}

/** One call presented to the integrity gate. */
export interface IntegrityGateInput {
  readonly tool: string;
  readonly classification: IntegrityClassification;
  /** The taint gate's direction is outbound: its targets are checked with `checkTargets` too. */
  readonly outbound: boolean;
  readonly targets: CallTargets;
  /** The arguments its targets are read from. */
  readonly targetArguments: readonly string[];
  /** The tool never has a target (shell, submit_output, web_search): nothing to check against a list. */
  readonly targetless: boolean;
  readonly args: ToolArgs | undefined;
  readonly taint: Level;
  readonly context: IntegrityView;
  readonly policy: IntegrityGatePolicy;
}

/** What a held call is held for, as the audit, the metric and `why` say it. */
export interface IntegrityFinding {
  readonly reason: HoldReason;
  /** The entry that made the context untrusted, or the one the argument's value came from. */
  readonly entry?: UntrustedEntry | undefined;
  /** The argument whose value came from untrusted text. */
  readonly argument?: string | undefined;
  /** The token with identity (a link, an address, an account) inside the argument that came from untrusted text. */
  readonly token?: string | undefined;
  readonly targets: readonly string[];
}

/** The integrity gate's answer. */
export type IntegrityVerdict =
  | { readonly kind: "pass" }
  | { readonly kind: "allowlist"; readonly index: number; readonly finding: IntegrityFinding }
  | { readonly kind: "rule"; readonly name: string; readonly finding: IntegrityFinding }
  | { readonly kind: "held"; readonly finding: IntegrityFinding };

/** The verdict with what it was computed from. */
export interface IntegrityOutcome {
  readonly verdict: IntegrityVerdict;
  readonly integrity: IntegrityLevel;
  /** Per top-level argument; empty for a call the gate did not look at. */
  readonly argsProvenance: Readonly<Record<string, Provenance>>;
  readonly ruleDiagnostics: readonly RuleDiagnostic[];
}

const RANK: Readonly<Record<Provenance, number>> = { none: 0, trusted: 1, untrusted: 2 };

/** The string leaves of a JSON value (numbers and booleans as text), at most `budget.left` of them. */
function collectLeaves(value: unknown, out: string[], budget: { left: number }): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string" || typeof v === "number" || typeof v === "bigint") {
      if (budget.left-- <= 0) return false;
      out.push(String(v));
    } else if (v !== null && typeof v === "object") {
      stack.push(...(Array.isArray(v) ? v : Object.values(v)));
    }
  }
  return true;
}

/**
 * The provenance of each top-level argument: `untrusted` when one of its values occurs only in untrusted text (or
 * the call has more values than the bound: fails closed), else `trusted` when one occurs in trusted text, else `none`.
 */
export function computeArgsProvenance(args: ToolArgs | undefined, context: Pick<IntegrityView, "provenanceOf">): Record<string, Provenance> {
  const out: Record<string, Provenance> = {};
  if (args === undefined) return out;
  const budget = { left: MAX_PROVENANCE_VALUES };
  for (const [name, value] of Object.entries(args)) {
    const leaves: string[] = [];
    if (!collectLeaves(value, leaves, budget)) {
      out[name] = "untrusted";
      continue;
    }
    let best: Provenance = "none";
    for (const leaf of leaves) {
      const p = context.provenanceOf(leaf);
      if (RANK[p] > RANK[best]) best = p;
      if (best === "untrusted") break;
    }
    out[name] = best;
  }
  return out;
}

/** A token with identity inside a reaching call's argument that occurs only in untrusted text. */
interface UntrustedToken {
  readonly argument: string;
  /** Absent when the call's text is past the scan's bounds (fails closed). */
  readonly token?: string | undefined;
}

/**
 * The first argument of the call (but its target arguments, which the target rule judges) carrying a token with
 * identity (identity-tokens.ts) that occurs in no trusted text while the context is untrusted: the model may have
 * read it, or a spelling of it, in what a third party wrote. Past the scan's bounds, the argument that crosses them (fails
 * closed). Under a trusted context nothing is held here.
 */
export function findUntrustedToken(args: ToolArgs | undefined, context: Pick<IntegrityView, "provenanceOf" | "integrity">, targetArguments: readonly string[] = []): UntrustedToken | undefined {
  if (args === undefined || context.integrity() === "trusted") return undefined;
  const perArgument = collectTextArguments(args, targetArguments);
  if (!Array.isArray(perArgument)) return perArgument;
  let found = 0;
  for (const [name, leaves] of perArgument) {
    const tokens = findIdentityTokens(leaves);
    found += tokens === "overflow" ? MAX_IDENTITY_TOKENS + 1 : tokens.length;
    if (tokens === "overflow" || found > MAX_IDENTITY_TOKENS) return { argument: name };
    const unseen = tokens.find((t) => context.provenanceOf(t.text) !== "trusted");
    if (unseen !== undefined) return { argument: name, token: unseen.text };
  }
  return undefined;
}

/** The string leaves of each argument but the target ones, or the argument to hold when past the scan's bounds. */
function collectTextArguments(args: ToolArgs, targetArguments: readonly string[]): Array<readonly [string, string[]]> | UntrustedToken {
  const perArgument: Array<readonly [string, string[]]> = [];
  let chars = 0;
  for (const [name, value] of Object.entries(args)) {
    if (targetArguments.includes(name)) continue;
    const leaves: string[] = [];
    if (!collectLeaves(value, leaves, { left: MAX_PROVENANCE_VALUES })) return { argument: name };
    for (const leaf of leaves) chars += leaf.length;
    if (chars > MAX_TOKEN_SCAN_CHARS) return { argument: name };
    perArgument.push([name, leaves]);
  }
  return perArgument;
}

/**
 * Whether every target of the call is named exactly (a pattern with no wildcard) by an untrusted-context allowlist
 * rule of the tool: the admin's configuration is trusted text, so such a target did not come only from untrusted
 * data, wherever else the agent read it.
 */
export function isEveryTargetVouched(tool: string, targets: readonly string[], rules: readonly AllowlistRule[]): boolean {
  if (targets.length === 0) return false;
  const names = rules.filter((r) => r.tool === tool).flatMap((r) => [...r.to, ...r.channel]).filter((p) => !p.includes("*")).map((p) => p.toLowerCase());
  return targets.every((t) => names.includes(t.toLowerCase()));
}

/** The first target (or target argument) whose value came only from untrusted text. */
function findUntrustedTarget(input: IntegrityGateInput, provenance: Readonly<Record<string, Provenance>>): IntegrityFinding | undefined {
  const targets = input.targets.targets;
  if (isEveryTargetVouched(input.tool, targets, input.policy.allowlist)) return undefined;
  for (const argument of input.targetArguments) {
    if (provenance[argument] !== "untrusted") continue;
    const value = input.args?.[argument];
    const entry = typeof value === "string" ? input.context.findUntrustedSource(value) : input.context.cause();
    return { reason: "untrusted-target", argument, entry, targets };
  }
  for (const target of targets) {
    if (input.context.provenanceOf(target) !== "untrusted") continue;
    return { reason: "untrusted-target", argument: input.targetArguments[0], entry: input.context.findUntrustedSource(target), targets };
  }
  return undefined;
}

/** Whether every target of the call is named by some allowlist rule of the tool (whatever its sensitivity). */
function isEveryTargetListed(tool: string, targets: readonly string[], rules: readonly AllowlistRule[]): boolean {
  const own = rules.filter((r) => r.tool === tool);
  if (own.some((r) => r.to.length === 0 && r.channel.length === 0)) return true;
  if (targets.length === 0) return false;
  return targets.every((t) => own.some((r) => [...r.to, ...r.channel].some((p) => isTargetPatternMatch(p, t))));
}

/** Why the call is held, or undefined when it is not. */
function findHold(input: IntegrityGateInput, how: { acting: boolean; checked: boolean; token: UntrustedToken | undefined }, provenance: Readonly<Record<string, Provenance>>): IntegrityFinding | undefined {
  const { acting, checked, token } = how;
  const targets = input.targets.targets;
  const fromUntrusted = findUntrustedTarget(input, provenance);
  if (fromUntrusted !== undefined) return fromUntrusted;
  // A reaching call that points someone to a link, an address or an account only untrusted text holds: the attacker
  // chose where the reader goes, whoever the call reaches.
  if (token !== undefined) {
    const entry = (token.token === undefined ? undefined : input.context.findUntrustedSource(token.token)) ?? input.context.cause();
    return { reason: "untrusted-target", argument: token.argument, token: token.token, entry, targets };
  }
  if (acting && input.context.integrity() === "untrusted") {
    const argument = Object.keys(provenance).find((name) => provenance[name] === "untrusted");
    return { reason: "untrusted-context", entry: input.context.cause(), argument, targets };
  }
  if (checked && !isEveryTargetListed(input.tool, targets, [...input.policy.taintAllowlist, ...input.policy.allowlist])) {
    return { reason: "unlisted-target", targets };
  }
  return undefined;
}

/** Evaluates the integrity gate for one call; `pass` when enforcement is off. */
export function evaluateIntegrityGate(input: IntegrityGateInput): IntegrityOutcome {
  const integrity = input.context.integrity();
  const { effect, checkTargets } = input.classification;
  const acting = isActing(effect);
  const checked = checkTargets && (input.outbound || effect === "reach") && !input.targetless;
  if (!input.policy.enforce || (!acting && !checked)) return { verdict: { kind: "pass" }, integrity, argsProvenance: {}, ruleDiagnostics: [] };
  const argsProvenance = computeArgsProvenance(input.args, input.context);
  const token = effect === "reach" ? findUntrustedToken(input.args, input.context, input.targetArguments) : undefined;
  if (token !== undefined) argsProvenance[token.argument] = "untrusted";
  const finding = findHold(input, { acting, checked, token }, argsProvenance);
  if (finding === undefined) return { verdict: { kind: "pass" }, integrity, argsProvenance, ruleDiagnostics: [] };
  if (finding.reason === "untrusted-context") {
    const call = { tool: input.tool, taint: "public" as const, targets: finding.targets };
    const index = input.policy.allowlist.findIndex((rule) => isAllowlistRuleMatch(rule, call));
    if (index !== -1) return { verdict: { kind: "allowlist", index, finding }, integrity, argsProvenance, ruleDiagnostics: [] };
  }
  const rules = evaluateRules(input.policy.rules, {
    tool: input.tool, targets: finding.targets, taint: input.taint, args: input.args, integrity, effect, argsProvenance,
  });
  const verdict: IntegrityVerdict = rules.match === undefined ? { kind: "held", finding } : { kind: "rule", name: rules.match, finding };
  return { verdict, integrity, argsProvenance, ruleDiagnostics: rules.diagnostics };
}
