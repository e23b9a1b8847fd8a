// The taint gate (taint-gate spec §3): a pure decision over the tool's classification, the context
// taint, the allowlist, the compiled CEL rules, the run's mode and the session raises. It returns what
// to do and the audit records to append, in order. Only outbound tools are gated; allowlist and rules
// can only allow a call the clearance check blocked; the mode decides what happens to one still blocked.
import { findAllowlistMatch } from "./allowlist.ts";
import type { AllowlistRule } from "./allowlist.ts";
import { allowlistSource, buildAuditEvent, scriptedSource } from "./gate-audit.ts";
import type { AuditEvent, Clock, DecisionSource } from "./gate-audit.ts";
import { evaluateRules } from "./cel-rules.ts";
import type { CompiledRuleSet, RuleDiagnostic } from "./cel-rules.ts";
import { resolveToolClassification } from "./classification.ts";
import type { OverrideTable, PolicyWarning, ToolClassification } from "./classification.ts";
import { isLevelAtMost } from "./levels.ts";
import { extractCallTargets, type CallTargets, type ToolArgs } from "./targets.ts";
import type { Level } from "./levels.ts";
import { buildGateBlockMessage, buildGateDeniedMessage, buildGatePrompt } from "./gate-messages.ts";
import type { GatePrompt } from "./gate-messages.ts";

/**
 * What happens to a call that is still blocked: `interactive` and `unattended` raise a prompt (the
 * latter is not expected to be answered and is denied when it expires), `yolo` waives the block with a
 * record of it, `headless` (no prompt lane) blocks at once.
 */
export type GateMode = "interactive" | "unattended" | "yolo" | "headless";

/** Upstream's `[limits] interaction_timeout_secs` default: a prompt nobody answers is denied after an hour. */
export const DEFAULT_PROMPT_TIMEOUT_SECONDS = 3600;

/** The static part of the gate's policy (from the LeviathPolicy). */
export interface GatePolicy {
  readonly overrides: OverrideTable;
  readonly allowlist: readonly AllowlistRule[];
  readonly rules: CompiledRuleSet;
}

/** The context as the gate needs it (a `ContextTaint` satisfies this). */
export interface GateContext {
  /** The context taint before this batch's results are added. */
  level(): Level;
  /** Regions whose level is above the clearance, in window order. */
  sourceRegions(clearance: Level): readonly string[];
}

/** One call presented to the gate. */
export interface GateInput {
  readonly taintTracking: boolean;
  readonly agentId: string;
  /** The runtime's tool call id; the prompt's request id is `gate-<callId>`. */
  readonly callId: string;
  readonly tool: string;
  /**
   * The call's arguments: its targets are extracted from them (with the target its override declares), and CEL rules
   * see them as `args`. Absent (a caller that extracted the target itself), `target` is the call's only target.
   */
  readonly args?: ToolArgs | undefined;
  readonly target?: string | undefined;
  readonly context: GateContext;
  readonly policy: GatePolicy;
  readonly mode: GateMode;
  readonly sessionRaises: ReadonlySet<string>;
  /** Seconds before an unanswered prompt is denied; 0 waits forever. The caller enforces it. */
  readonly promptTimeoutSeconds: number;
  readonly clock: Clock;
}

/** How the gate reached its decision, before the mode is applied. */
export type GateVerdict =
  | { readonly kind: "not-outbound" }
  | { readonly kind: "within-clearance" }
  | { readonly kind: "allowlist"; readonly index: number }
  | { readonly kind: "rule"; readonly name: string }
  | { readonly kind: "blocked" };

/** What the caller needs to settle a prompt later with `answerGatePrompt`. */
export interface PendingGate {
  readonly agentId: string;
  readonly tool: string;
  readonly taint: Level;
  readonly clearance: Level;
}

interface OutcomeBase {
  readonly classification: ToolClassification;
  /** Audit records to append, in order. */
  readonly events: readonly AuditEvent[];
  readonly warnings: readonly PolicyWarning[];
  readonly ruleDiagnostics: readonly RuleDiagnostic[];
}

/** The gate's answer for one call. */
export type GateOutcome =
  | (OutcomeBase & { readonly kind: "run"; readonly verdict: GateVerdict | { readonly kind: "taint-disabled" } })
  | (OutcomeBase & { readonly kind: "waived" })
  | (OutcomeBase & { readonly kind: "block"; readonly message: string })
  | (OutcomeBase & { readonly kind: "prompt"; readonly prompt: GatePrompt; readonly pending: PendingGate });

/** Everything the verdict depends on. */
export interface VerdictInput {
  readonly tool: string;
  readonly classification: ToolClassification;
  readonly taint: Level;
  readonly target?: string | undefined;
  /** Every target of the call; when absent, the single `target` if there is one. */
  readonly targets?: readonly string[] | undefined;
  /** The call's arguments, for rules that read `args`; absent, such rules give no opinion. */
  readonly args?: ToolArgs | undefined;
  readonly allowlist: readonly AllowlistRule[];
  readonly rules: CompiledRuleSet;
}

/** The gate's verdict without the mode: shared by the live gate and `policy test`. */
export function decideGateVerdict(input: VerdictInput): { verdict: GateVerdict; ruleDiagnostics: readonly RuleDiagnostic[] } {
  const { classification, taint } = input;
  if (classification.direction !== "outbound") return { verdict: { kind: "not-outbound" }, ruleDiagnostics: [] };
  if (isLevelAtMost(taint, classification.clearance)) return { verdict: { kind: "within-clearance" }, ruleDiagnostics: [] };
  const call = { tool: input.tool, taint, target: input.target, targets: input.targets, args: input.args };
  const index = findAllowlistMatch(input.allowlist, call);
  if (index !== undefined) return { verdict: { kind: "allowlist", index }, ruleDiagnostics: [] };
  const rules = evaluateRules(input.rules, call);
  if (rules.match !== undefined) return { verdict: { kind: "rule", name: rules.match }, ruleDiagnostics: rules.diagnostics };
  return { verdict: { kind: "blocked" }, ruleDiagnostics: rules.diagnostics };
}

/** The call's targets: extracted from its arguments when given, else its one given target. */
function computeCallTargets(input: GateInput): CallTargets {
  if (input.args !== undefined) return extractCallTargets(input.tool, input.args, input.policy.overrides.get(input.tool)?.target);
  return { target: input.target, targets: input.target === undefined ? [] : [input.target] };
}

/** Evaluates the gate for one call (taint-gate spec §3.1). Taint tracking off: run, no records. */
export function evaluateGate(input: GateInput): GateOutcome {
  const { classification, warnings } = resolveToolClassification(input.tool, {
    overrides: input.policy.overrides,
    sessionRaises: input.sessionRaises,
  });
  if (!input.taintTracking) {
    return { kind: "run", verdict: { kind: "taint-disabled" }, classification, events: [], warnings, ruleDiagnostics: [] };
  }
  const taint = input.context.level();
  const clearance = classification.clearance;
  const record = (source: DecisionSource, allowed: boolean, level: Level = taint): AuditEvent =>
    buildAuditEvent(input.clock, { agentId: input.agentId, tool: input.tool, taint: level, clearance, allowed, source });
  const { target, targets } = computeCallTargets(input);
  const { verdict, ruleDiagnostics } = decideGateVerdict({
    tool: input.tool, classification, taint, target, targets, args: input.args, allowlist: input.policy.allowlist, rules: input.policy.rules,
  });
  const base = { classification, warnings, ruleDiagnostics };
  switch (verdict.kind) {
    case "not-outbound":
      // Upstream records Public here whatever the real taint: the tool cannot carry it anywhere.
      return { ...base, kind: "run", verdict, events: [record("AutoAllow", true, "public")] };
    case "within-clearance":
      return { ...base, kind: "run", verdict, events: [record("AutoAllow", true)] };
    case "allowlist":
      return { ...base, kind: "run", verdict, events: [record("AutoBlock", false), record(allowlistSource(verdict.index), true)] };
    case "rule":
      return { ...base, kind: "run", verdict, events: [record("AutoBlock", false), record(scriptedSource(verdict.name), true)] };
    case "blocked":
      break;
  }
  const blocked = record("AutoBlock", false);
  switch (input.mode) {
    case "yolo":
      return { ...base, kind: "waived", events: [blocked, record("YoloAutoApprove", true)] };
    case "headless":
      return {
        ...base, kind: "block", events: [blocked],
        message: buildGateBlockMessage(input.tool, taint, clearance, input.context.sourceRegions(clearance)),
      };
    case "interactive":
    case "unattended":
      return {
        ...base, kind: "prompt", events: [blocked],
        prompt: buildGatePrompt({ callId: input.callId, tool: input.tool, taint, clearance, timeoutSeconds: input.promptTimeoutSeconds }),
        pending: { agentId: input.agentId, tool: input.tool, taint, clearance },
      };
  }
}

/** An answer to a gate prompt: a choice index (or none), a cancel, or the prompt's expiry. */
export type GatePromptAnswer =
  | { readonly kind: "choice"; readonly index: number | undefined }
  | { readonly kind: "cancelled" }
  | { readonly kind: "expired" };

/** What an answer means: index 0 allows once, 1 allows for the session, anything else denies. */
export type GateChoice = "allow-once" | "allow-session" | "deny";

/** Maps an answer to its meaning; a missing index, a cancel and an expiry all deny (as upstream). */
export function decideGateChoice(answer: GatePromptAnswer): GateChoice {
  if (answer.kind !== "choice") return "deny";
  if (answer.index === 0) return "allow-once";
  if (answer.index === 1) return "allow-session";
  return "deny";
}

/** The result of answering a prompt. */
export type GateAnswerOutcome =
  | { readonly kind: "run"; readonly events: readonly AuditEvent[]; readonly raiseClearanceOf: string | undefined }
  | { readonly kind: "block"; readonly events: readonly AuditEvent[]; readonly message: string };

/**
 * Settles a prompt. "Allow for this session" names the tool whose clearance becomes private for the
 * rest of the run (add it to the session raises with `addSessionRaise`).
 */
export function answerGatePrompt(pending: PendingGate, answer: GatePromptAnswer, clock: Clock): GateAnswerOutcome {
  const choice = decideGateChoice(answer);
  const record = (source: DecisionSource, allowed: boolean): AuditEvent =>
    buildAuditEvent(clock, { agentId: pending.agentId, tool: pending.tool, taint: pending.taint, clearance: pending.clearance, allowed, source });
  if (choice === "allow-once") return { kind: "run", events: [record("UserAllowOnce", true)], raiseClearanceOf: undefined };
  if (choice === "allow-session") return { kind: "run", events: [record("UserAlwaysAllow", true)], raiseClearanceOf: pending.tool };
  return { kind: "block", events: [record("UserDenied", false)], message: buildGateDeniedMessage(pending.tool, pending.taint, pending.clearance) };
}

/** The session raises with one more exact tool name (a new set; the old one is not changed). */
export function addSessionRaise(raises: ReadonlySet<string>, tool: string): ReadonlySet<string> {
  return new Set([...raises, tool]);
}
