// Deciding a call under two policies (docs/operations.md, "Rolling out a policy"), pure. A running Run decides each
// call under its pinned policy and, while a rollout reaches it, under the generation in force (the stricter of the
// two is enforced, so a later generation tightens a running Run and never loosens it) and under a warn or audit
// candidate (never enforced: a different outcome is a would-flip, recorded with what differs).
import type { ToolCallDecision } from "./decide-tool-call.ts";

/** A decision's outcome as a rollout compares it. */
export type DecisionClass = "allow" | "ask" | "deny";

/** What one policy said about a call: its decision, or that the stage under it does not offer the tool. */
export type PolicyVerdict = ToolCallDecision | { readonly kind: "unavailable" };

/** How strict each outcome is: the higher wins between the pinned policy and the generation in force. */
const STRICTNESS: Readonly<Record<DecisionClass, number>> = { allow: 0, ask: 1, deny: 2 };

/** The outcome of a verdict: a refusal (or a tool not offered) is deny, any prompt is ask, a run is allow. */
export function classifyVerdict(v: PolicyVerdict): DecisionClass {
  switch (v.kind) {
    case "run":
      return "allow";
    case "refuse":
    case "unavailable":
      return "deny";
    case "ask-permission":
    case "ask-gate":
    case "ask-integrity":
    case "ask-held":
      return "ask";
    default: {
      const never: never = v;
      return never;
    }
  }
}

/** What a run rests on: the permission and its source, then the gate's rule or allowlist entry, else its source. */
function describeRunBasis(v: Extract<ToolCallDecision, { kind: "run" }>): string {
  const verdict = v.gate?.kind === "run" ? v.gate.verdict : undefined;
  const rule = verdict?.kind === "rule" ? `rule '${verdict.name}'` : verdict?.kind === "allowlist" ? `allowlist entry ${verdict.index}` : v.source;
  return v.permission ? `permission ${v.permission.permission} (${v.permission.source}), ${rule}` : rule;
}

/** The rule or field a verdict rests on, in words: the refusal code, the permission and its source, the gate's verdict. */
export function describeVerdictBasis(v: PolicyVerdict): string {
  switch (v.kind) {
    case "unavailable":
      return "tool not offered by the stage";
    case "refuse":
      return v.gate?.kind === "block" ? `${v.reason} (taint gate)` : v.reason;
    case "ask-permission":
      return `permission ask (${v.permission.source})`;
    case "ask-gate":
      return "taint gate prompt";
    case "ask-integrity":
      return `integrity hold (${v.finding.reason})`;
    case "ask-held":
      return `held by ${v.holds.map((h) => h.check).join(" and ")} (one prompt)`;
    case "run":
      return describeRunBasis(v);
    default: {
      const never: never = v;
      return never;
    }
  }
}

/**
 * Of the pinned verdict and the generation in force's, the one enforced: the stricter outcome, the pinned one on a
 * tie (its prompt and its sources are the ones the Run has been answering).
 */
export function pickStricter(pinned: PolicyVerdict, inForce: PolicyVerdict): { verdict: PolicyVerdict; from: "pinned" | "in-force" } {
  return STRICTNESS[classifyVerdict(inForce)] > STRICTNESS[classifyVerdict(pinned)] ? { verdict: inForce, from: "in-force" } : { verdict: pinned, from: "pinned" };
}

/** A call whose outcome the candidate would change. */
export interface WouldFlip {
  readonly tool: string;
  readonly target?: string | undefined;
  readonly now: DecisionClass;
  readonly candidate: DecisionClass;
  /** What the two rest on: the basis now, then under the candidate. */
  readonly differs: string;
}

/** The would-flip of a call, or undefined when the candidate gives it the same outcome. */
export function decideWouldFlip(call: { tool: string; target?: string | undefined }, now: PolicyVerdict, candidate: PolicyVerdict): WouldFlip | undefined {
  const a = classifyVerdict(now);
  const b = classifyVerdict(candidate);
  if (a === b) return undefined;
  return { tool: call.tool, ...(call.target !== undefined ? { target: call.target } : {}), now: a, candidate: b, differs: `${describeVerdictBasis(now)} -> ${describeVerdictBasis(candidate)}` };
}

/** A would-flip in one line, for an Event and `kubectl leviath why`. */
export function formatWouldFlip(flip: WouldFlip): string {
  return `${flip.tool}${flip.target !== undefined ? ` ${flip.target}` : ""}: ${flip.now} -> ${flip.candidate} (${flip.differs})`.slice(0, 1024);
}
