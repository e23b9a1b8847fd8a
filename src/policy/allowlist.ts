// Static allowlist rules (`[[allowlist]]`, taint-gate spec §3.2). A rule can only allow a call the
// clearance check blocked: exact tool name (no alias folding), context taint at most the rule's
// `max_sensitivity`, and, when the rule names targets, a call with at least one target whose every
// target matches one of them (a mail to two recipients is allowed only if the rule allows both).
import { isLevelAtMost, parseLevel } from "./levels.ts";
import type { Level } from "./levels.ts";

/** One allowlist rule, defaults applied. */
export interface AllowlistRule {
  /** Compared exactly and case-sensitively with the called name. */
  readonly tool: string;
  readonly to: readonly string[];
  readonly channel: readonly string[];
  readonly maxSensitivity: Level;
}

/** A rule as read from a file, before defaults. */
export interface RawAllowlistRule {
  readonly tool?: string;
  readonly to?: readonly string[];
  readonly channel?: readonly string[];
  readonly max_sensitivity?: string;
}

/** Applies upstream's defaults: empty tool and lists; a missing or unreadable `max_sensitivity` is public. */
export function parseAllowlistRule(raw: RawAllowlistRule): AllowlistRule {
  return {
    tool: raw.tool ?? "",
    to: raw.to ?? [],
    channel: raw.channel ?? [],
    maxSensitivity: (raw.max_sensitivity === undefined ? undefined : parseLevel(raw.max_sensitivity)) ?? "public",
  };
}

/**
 * The whole pattern language: `*` alone matches anything (even ""); a leading `*` means "ends with the
 * rest"; otherwise a trailing `*` means "starts with the rest"; otherwise exact. One wildcard position
 * only, so `*example*` is "ends with `example*`" and `a*b` is literal. Byte-exact and case-sensitive.
 */
export function isTargetPatternMatch(pattern: string, target: string): boolean {
  if (pattern === "*") return true;
  if (pattern.startsWith("*")) return target.endsWith(pattern.slice(1));
  if (pattern.endsWith("*")) return target.startsWith(pattern.slice(0, -1));
  return pattern === target;
}

/** What a rule is matched against. */
export interface AllowlistCall {
  readonly tool: string;
  readonly taint: Level;
  /** The extracted target; undefined when the tool has none or it could not be extracted. */
  readonly target?: string | undefined;
  /** Every extracted target (policy/targets.ts); when absent, the single `target` if there is one. */
  readonly targets?: readonly string[] | undefined;
}

/** True when the rule allows the call; a rule with target patterns never matches a call without a target. */
export function isAllowlistRuleMatch(rule: AllowlistRule, call: AllowlistCall): boolean {
  if (rule.tool !== call.tool) return false;
  if (!isLevelAtMost(call.taint, rule.maxSensitivity)) return false;
  if (rule.to.length === 0 && rule.channel.length === 0) return true;
  const targets = call.targets ?? (call.target === undefined ? [] : [call.target]);
  if (targets.length === 0) return false;
  return targets.every((t) => rule.to.some((p) => isTargetPatternMatch(p, t)) || rule.channel.some((p) => isTargetPatternMatch(p, t)));
}

/** The 0-based position of the first matching rule, or undefined. */
export function findAllowlistMatch(rules: readonly AllowlistRule[], call: AllowlistCall): number | undefined {
  const index = rules.findIndex((rule) => isAllowlistRuleMatch(rule, call));
  return index === -1 ? undefined : index;
}
