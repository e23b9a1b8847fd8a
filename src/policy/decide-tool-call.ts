// The one decision of a tool call (DESIGN.md §5), and the one the sidecar makes: the permission first (cheaper,
// and it avoids asking about the taint of a call that will be refused anyway), then the paths the call names
// against the read paths, then the taint gate, then integrity; a call runs only if all allow. A call held by more
// than one of them is asked about once (issue 44, held-call.ts); a refusal by any refuses it without a prompt.
// Unlike upstream, a `deny` refuses before the gate is evaluated, so no `YoloAutoApprove` is ever recorded for a
// call that then did not run, and `submit_output` is subject to `deny` like every other tool. Pure: the filesystem the read paths need
// comes in with the paths (a PathFs), the clock with the gate's input.
import type { RecordedRefusalCode } from "../api/sidecar-contract.ts";
import type { CallDecisionSource, GateDecisionSource } from "../api/decision-sources.ts";
import { decisionSourceKind, type AuditEvent } from "./gate-audit.ts";
import { findPathRefusal, resolveCallPaths, type CallPaths, type PathCheck, type PathRefusalCode } from "./call-paths.ts";
import { evaluateGate, type GateInput, type GateOutcome, type PendingGate } from "./gate.ts";
import { toPromptTimeout, type GatePrompt } from "./gate-messages.ts";
import { buildPermissionDeniedMessage, buildUserDeclinedMessage, resolveToolPermission } from "./permissions.ts";
import type { PermissionInputs, PermissionMap, ResolvedPermission } from "./permissions.ts";
import { extractCallTargets, listTargetArguments, TARGETLESS_TOOLS, type ToolArgs } from "./targets.ts";
import { resolveToolClassification } from "./classification.ts";
import { resolveIntegrityClassification } from "./integrity-classification.ts";
import { evaluateIntegrityGate, type IntegrityFinding, type IntegrityGatePolicy, type IntegrityOutcome, type IntegrityView } from "./integrity-gate.ts";
import { buildIntegrityHeldMessage, buildIntegrityPrompt } from "./integrity-messages.ts";
import { combineVerdicts, HELD_ONCE_OPTIONS, type CheckVerdict, type HoldingCheck } from "./held-call.ts";

/** Options of a tool-approval (permission `ask`) prompt, in upstream's order. */
export const PERMISSION_PROMPT_OPTIONS = ["Allow once", "Allow for this stage", "Allow for this run", "Deny"] as const;

/** The meaning of a tool-approval answer: index 0 once, 1 this stage, 2 this run; anything else declines. */
export type PermissionChoice = "allow-once" | "allow-stage" | "allow-run" | "decline";

/** Maps a tool-approval answer (undefined for a cancel, expiry or missing index) to its meaning. */
export function decidePermissionChoice(index: number | undefined): PermissionChoice {
  if (index === 0) return "allow-once";
  if (index === 1) return "allow-stage";
  if (index === 2) return "allow-run";
  return "decline";
}

/** How a call that runs was let through: the gate's last record, or the person who approved its permission prompt. */
export type RunSource = GateDecisionSource | Extract<CallDecisionSource, "taint_disabled" | "user_approved" | "integrity_allowlist" | "integrity_rule" | "integrity_waived">;

/** The integrity step's inputs (issue 40): the context's labels and provenance, and the policy. */
export interface IntegrityStep {
  readonly context: IntegrityView;
  readonly policy: IntegrityGatePolicy & { readonly onHold: "ask" | "deny"; readonly checkTargets: boolean };
}

/** The steps a call continuing after a prompt already passed: they are not decided again. */
export interface PassedSteps {
  /** Its permission allowed it (at once, or at its prompt). */
  readonly permission?: boolean;
  /** Its gate prompt was answered allow: how, as the run's source. */
  readonly gate?: RunSource | undefined;
  /** Its integrity hold was answered allow at its prompt. */
  readonly integrity?: boolean;
}

/** Everything one call is decided from. */
export interface ToolCallInput {
  readonly gate: GateInput;
  /** The permission maps; the tool is `gate.tool`. */
  readonly permissions: Omit<PermissionInputs, "tool">;
  /**
   * The call's `ask` is already settled: approved at its permission prompt, or covered by a scoped grant
   * (allow for this stage/run, a safe command). It never lifts a `deny`.
   */
  readonly permissionApproved?: boolean;
  /** The call's own permission prompt was answered allow: a run the gate let through as is counts as `user_approved`. */
  readonly answeredPrompt?: boolean;
  /** The call's arguments as checked against its tool's schema (its target is `gate.target`). */
  readonly args?: ToolArgs;
  /** The paths the call names (a file tool's), with the filesystem they are resolved on; absent: none. */
  readonly paths?: CallPaths;
  readonly passed?: PassedSteps;
  /** The integrity step; absent: none (as upstream). */
  readonly integrity?: IntegrityStep | undefined;
}

/** A tool-approval prompt the caller must raise before the call can go on. */
export interface PermissionPrompt {
  readonly tool: string;
  readonly options: readonly string[];
  /** Seconds after which the caller declines it; undefined waits forever. */
  readonly timeoutSeconds: number | undefined;
}

/** The refusal keys of the decision: each the code of its row in the refusal table (api/sidecar-contract.ts). */
export type DecisionRefusalCode = Extract<RecordedRefusalCode, "permission-denied" | "approval-unavailable" | "gate-blocked" | "integrity-held" | PathRefusalCode>;

/** One check's hold of a call held by several (issue 44), with what its own prompt would have carried. */
export type Hold =
  | { readonly check: "permission"; readonly prompt: PermissionPrompt }
  | { readonly check: "gate"; readonly prompt: GatePrompt; readonly pending: PendingGate }
  | { readonly check: "integrity"; readonly prompt: PermissionPrompt & { readonly text: string }; readonly finding: IntegrityFinding };

/** What the sidecar does with the call; `events` are the gate's audit records to append, in order. */
export type ToolCallDecision =
  | {
    readonly kind: "run";
    /** Undefined when an earlier pass of the call decided it. */
    readonly permission: ResolvedPermission | undefined;
    readonly gate: GateOutcome | undefined;
    readonly events: readonly AuditEvent[];
    readonly source: RunSource;
    /** The paths resolved, for the executor to open exactly what was judged; undefined when the call names none. */
    readonly paths: readonly PathCheck[] | undefined;
    /** The integrity step's outcome, when it looked at the call. */
    readonly integrity?: IntegrityOutcome | undefined;
  }
  | {
    readonly kind: "refuse";
    /** The refusal key. */
    readonly reason: DecisionRefusalCode;
    readonly message: string;
    readonly permission: ResolvedPermission | undefined;
    readonly gate: GateOutcome | undefined;
    readonly events: readonly AuditEvent[];
    readonly integrity?: IntegrityOutcome | undefined;
  }
  | {
    readonly kind: "ask-integrity";
    readonly permission: ResolvedPermission | undefined;
    readonly gate: GateOutcome | undefined;
    readonly integrity: IntegrityOutcome;
    readonly finding: IntegrityFinding;
    readonly prompt: PermissionPrompt & { readonly text: string };
    readonly events: readonly AuditEvent[];
    /** How the gate let the call through before it was held. */
    readonly source: RunSource;
  }
  | { readonly kind: "ask-permission"; readonly permission: ResolvedPermission; readonly prompt: PermissionPrompt; readonly events: readonly AuditEvent[] }
  | {
    readonly kind: "ask-gate";
    readonly permission: ResolvedPermission | undefined;
    readonly gate: GateOutcome;
    readonly prompt: GatePrompt;
    readonly pending: PendingGate;
    readonly events: readonly AuditEvent[];
  }
  | {
    /** Held by two or three checks, none refusing it: one prompt names every hold, and one answer settles them. */
    readonly kind: "ask-held";
    readonly permission: ResolvedPermission | undefined;
    readonly gate: GateOutcome | undefined;
    readonly integrity: IntegrityOutcome | undefined;
    /** The holds, in the checks' order (permission, gate, integrity). */
    readonly holds: readonly Hold[];
    readonly prompt: { readonly options: readonly string[]; readonly timeoutSeconds: number | undefined };
    readonly events: readonly AuditEvent[];
    /** How the call runs once allowed when the gate let it through (a held gate's answer says it otherwise). */
    readonly source: RunSource;
  };

type AskDecision = Extract<ToolCallDecision, { kind: "ask-permission" | "ask-gate" | "ask-integrity" | "ask-held" }>;

/** The holds an asking decision stands for. */
export function listHolds(d: AskDecision): readonly Hold[] {
  switch (d.kind) {
    case "ask-permission":
      return [{ check: "permission", prompt: d.prompt }];
    case "ask-gate":
      return [{ check: "gate", prompt: d.prompt, pending: d.pending }];
    case "ask-integrity":
      return [{ check: "integrity", prompt: d.prompt, finding: d.finding }];
    case "ask-held":
      return d.holds;
  }
}

function toVerdict(d: ToolCallDecision): CheckVerdict<Extract<ToolCallDecision, { kind: "refuse" }>, readonly Hold[]> {
  if (d.kind === "refuse") return { kind: "deny", deny: d };
  if (d.kind === "run") return { kind: "allow" };
  return { kind: "ask", hold: listHolds(d) };
}

/**
 * One decision for a call that `first` holds (the permission's ask, the gate's prompt) and whose later checks,
 * decided as if `first` were answered allow, came to `rest`: a refusal in `rest` refuses without a prompt; a hold
 * joins `first`'s in one prompt; when `rest` runs, `first` stands alone (the later checks are decided again after
 * its answer, as they always were).
 */
function joinHolds(first: AskDecision, rest: ToolCallDecision, timeoutSeconds: number | undefined): ToolCallDecision {
  const v = combineVerdicts([toVerdict(first), toVerdict(rest)]);
  if (v.kind === "deny") return v.deny;
  const holds = v.kind === "ask" ? v.holds.flat() : [];
  if (holds.length <= 1 || rest.kind === "run" || rest.kind === "refuse" || rest.kind === "ask-permission") return first;
  const checks: HoldingCheck[] = holds.map((h) => h.check);
  const integrity = "integrity" in rest ? rest.integrity : undefined;
  const source: RunSource = rest.kind === "ask-gate" ? "user_allow_once" : rest.source;
  return {
    kind: "ask-held", permission: first.permission ?? rest.permission, gate: rest.gate, integrity, holds, events: rest.events, source,
    prompt: { options: checks.includes("permission") ? PERMISSION_PROMPT_OPTIONS : HELD_ONCE_OPTIONS, timeoutSeconds },
  };
}

function launchFor(input: ToolCallInput): PermissionMap {
  // A yolo run is `--yolo`: every `ask` becomes `allow` (a specific launch entry still wins over `*`).
  return input.gate.mode === "yolo" ? { "*": "allow", ...input.permissions.launch } : { ...input.permissions.launch };
}

/** The permission step: a decision that stops the call here, or the permission that lets it go on. */
function decidePermission(input: ToolCallInput): { readonly stop: ToolCallDecision } | { readonly pass: ResolvedPermission | undefined } {
  if (input.passed?.permission === true) return { pass: undefined };
  const tool = input.gate.tool;
  const permission = resolveToolPermission({ ...input.permissions, tool, launch: launchFor(input) });
  if (permission.permission === "deny") {
    return { stop: { kind: "refuse", reason: "permission-denied", message: buildPermissionDeniedMessage(tool), permission, gate: undefined, events: [] } };
  }
  if (permission.permission !== "ask" || input.permissionApproved === true) return { pass: permission };
  if (input.gate.mode === "headless") {
    // Nobody can ever answer: refuse rather than wait, as for an approval nobody gave.
    return { stop: { kind: "refuse", reason: "approval-unavailable", message: buildUserDeclinedMessage(tool), permission, gate: undefined, events: [] } };
  }
  const prompt = { tool, options: PERMISSION_PROMPT_OPTIONS, timeoutSeconds: toPromptTimeout(input.gate.promptTimeoutSeconds) };
  return { stop: { kind: "ask-permission", permission, events: [], prompt } };
}

/** The decision source of the gate's records: the kind of the last one (`taint_disabled` when there is none). */
export function computeGateSource(events: readonly AuditEvent[]): GateDecisionSource | Extract<CallDecisionSource, "taint_disabled"> {
  const last = events.at(-1);
  return last === undefined ? "taint_disabled" : decisionSourceKind(last.decision_source);
}

function computeRunSource(input: ToolCallInput, events: readonly AuditEvent[]): RunSource {
  const source = computeGateSource(events);
  // The gate did not stand in the way: what let the call through is the person who answered its prompt.
  return input.answeredPrompt === true && (source === "auto_allow" || source === "taint_disabled") ? "user_approved" : source;
}

/**
 * Decides one call: permission (deny refuses, ask needs approval), then its paths, then the taint gate, then
 * integrity. A call one check holds has the checks after it decided too, as if the hold were answered allow: a
 * refusal among them refuses at once, without a prompt, and their holds join it in one prompt (issue 44).
 */
export function decideToolCall(input: ToolCallInput): ToolCallDecision {
  const step = decidePermission(input);
  if ("pass" in step) return decideChecks(input, step.pass);
  if (step.stop.kind !== "ask-permission") return step.stop;
  const rest = decideChecks({ ...input, permissionApproved: true, answeredPrompt: true }, step.stop.permission);
  return joinHolds(step.stop, rest, step.stop.prompt.timeoutSeconds);
}

/** The checks after the permission: the call's paths, the taint gate, integrity. */
function decideChecks(input: ToolCallInput, permission: ResolvedPermission | undefined): ToolCallDecision {
  const paths = input.paths === undefined ? undefined : resolveCallPaths(input.paths);
  const refused = paths === undefined ? undefined : findPathRefusal(paths);
  if (refused !== undefined) return { kind: "refuse", reason: refused.code, message: refused.message, permission, gate: undefined, events: [] };
  const passedGate = input.passed?.gate;
  if (passedGate !== undefined) return decideIntegrity(input, { kind: "run", permission, gate: undefined, events: [], source: passedGate, paths });
  const gate = evaluateGate(input.gate);
  switch (gate.kind) {
    case "run":
    case "waived":
      return decideIntegrity(input, { kind: "run", permission, gate, events: gate.events, source: computeRunSource(input, gate.events), paths });
    case "block":
      return { kind: "refuse", reason: "gate-blocked", message: gate.message, permission, gate, events: gate.events };
    case "prompt": {
      const asked = { kind: "ask-gate", permission, gate, prompt: gate.prompt, pending: gate.pending, events: gate.events } as const;
      // Integrity decided now, as if the gate's prompt were answered allow once.
      return joinHolds(asked, decideIntegrity(input, { kind: "run", permission, gate, events: gate.events, source: "user_allow_once", paths }), gate.prompt.timeoutSeconds);
    }
  }
}

/** The integrity step's outcome for a call the gate let through (policy/integrity-gate.ts). */
export function evaluateIntegrityStep(input: ToolCallInput, step: IntegrityStep): IntegrityOutcome {
  const { tool, args, policy, sessionRaises } = input.gate;
  const override = policy.overrides.get(tool);
  const callArgs = args ?? {};
  return evaluateIntegrityGate({
    tool,
    classification: resolveIntegrityClassification(tool, override, step.policy.checkTargets),
    outbound: resolveToolClassification(tool, { overrides: policy.overrides, sessionRaises }).classification.direction === "outbound",
    targets: args === undefined ? { target: input.gate.target, targets: input.gate.target === undefined ? [] : [input.gate.target] } : extractCallTargets(tool, callArgs, override?.target),
    targetArguments: listTargetArguments(tool, callArgs, override?.target),
    targetless: TARGETLESS_TOOLS.has(tool),
    args,
    taint: input.gate.context.level(),
    context: step.context,
    policy: step.policy,
  });
}

/** Applies the integrity step to a call the gate let through: it runs, is refused, or asks (interactive, onHold ask). */
function decideIntegrity(input: ToolCallInput, run: Extract<ToolCallDecision, { kind: "run" }>): ToolCallDecision {
  const step = input.integrity;
  if (step === undefined || !step.policy.enforce || input.passed?.integrity === true) return run;
  const integrity = evaluateIntegrityStep(input, step);
  const v = integrity.verdict;
  const tool = input.gate.tool;
  switch (v.kind) {
    case "pass":
      return { ...run, integrity };
    case "allowlist":
      return { ...run, integrity, source: "integrity_allowlist" };
    case "rule":
      return { ...run, integrity, source: "integrity_rule" };
    case "held":
      break;
  }
  const mode = input.gate.mode;
  if (step.policy.onHold === "ask" && mode === "yolo") return { ...run, integrity, source: "integrity_waived" };
  if (step.policy.onHold === "deny" || mode !== "interactive") {
    return { kind: "refuse", reason: "integrity-held", message: buildIntegrityHeldMessage(tool, v.finding), permission: run.permission, gate: run.gate, events: run.events, integrity };
  }
  const prompt = { tool, options: PERMISSION_PROMPT_OPTIONS, timeoutSeconds: toPromptTimeout(input.gate.promptTimeoutSeconds), text: buildIntegrityPrompt(tool, v.finding) };
  return { kind: "ask-integrity", permission: run.permission, gate: run.gate, integrity, finding: v.finding, prompt, events: run.events, source: run.source };
}
