// What an answered, expired, withdrawn or cancelled prompt means for its call (taint-gate spec §5.3, §7): a tool-approval
// answer grants once, for the stage or for the run, or declines; a gate answer allows once, raises the tool's
// clearance for the session, or denies with upstream's records and text. Pure: the service applies it.
import type { ApprovalDecision } from "../../api/approval.ts";
import type { ApprovalKind } from "../../metrics/sidecar-metrics.ts";
import type { AuditEvent, Clock } from "../../policy/gate-audit.ts";
import { computeGateSource, decidePermissionChoice, type Hold, type RunSource } from "../../policy/decide-tool-call.ts";
import { decideHeldAnswer, type HeldAnswer, type HoldingCheck } from "../../policy/held-call.ts";
import { answerGatePrompt, type GateAnswerOutcome, type GatePromptAnswer, type PendingGate } from "../../policy/gate.ts";
import { buildUserDeclinedMessage } from "../../policy/permissions.ts";
import type { ApprovalSettlement } from "./approvals.ts";

/** What the call does next. */
export type SettlementAction =
  | { readonly kind: "stopping" }
  | { readonly kind: "withdrawn" }
  | { readonly kind: "deny"; readonly code: PromptRefusalCode; readonly message: string; readonly events: readonly AuditEvent[] }
  | { readonly kind: "permission-granted"; readonly scope: "once" | "stage" | "run" }
  | { readonly kind: "gate-allowed"; readonly events: readonly AuditEvent[]; readonly raise: string | undefined; readonly source: RunSource }
  /**
   * A prompt naming several holds, answered allow: the permission's grant (`scope`, when it was one of them), the
   * gate's answer records (`events`, and the run's `source` from them, when it was one of them); never a raise.
   */
  | { readonly kind: "held-allowed"; readonly scope: "once" | "stage" | "run" | undefined; readonly events: readonly AuditEvent[]; readonly source: RunSource | undefined };

/**
 * A prompt's refusal: answered `deny`, or nobody answered within the interaction timeout (`-timed-out`). Upstream
 * records an expired gate prompt as UserDenied and words both alike (taint-gate spec §3.4, §3.6, §5.3): the gate's
 * records and the model's text stay upstream's, the code and the audit's decision source say the prompt expired.
 */
export type PromptRefusalCode = "approval-declined" | "approval-timed-out" | "gate-denied" | "gate-timed-out";

const PERMISSION_INDEX: Readonly<Record<ApprovalDecision, number>> = { allowOnce: 0, allowForStage: 1, allowForRun: 2, deny: 3 };
// A gate prompt has no stage scope: "allow for this stage" reads as allow once, "for the run" as for the session.
const GATE_INDEX: Readonly<Record<ApprovalDecision, number>> = { allowOnce: 0, allowForStage: 0, allowForRun: 1, deny: 2 };

/** The prompt a call waited on: its kind, the call's tool, and for a gate prompt what its answer is settled against. */
export interface SettledPrompt {
  readonly kind: ApprovalKind;
  readonly tool: string;
  readonly pending?: PendingGate | undefined;
  /** A prompt naming several holds: the checks it covers, in order. */
  readonly held?: readonly HoldingCheck[] | undefined;
}

/**
 * The approval a prompt naming several holds is raised as: the first hold's kind and id (`tool-`, `gate-` or
 * `integrity-<call>`), the gate's pending state when the gate is one of them, and the checks it covers.
 */
export function describeHeldPrompt(callId: string, holds: readonly Hold[]): { kind: ApprovalKind; id: string; pending: PendingGate | undefined; held: readonly HoldingCheck[] } {
  const first = holds[0];
  if (first === undefined) throw new Error(`a held prompt for call '${callId}' names no hold`);
  const gate = holds.find((h) => h.check === "gate");
  const id = first.check === "gate" ? first.prompt.requestId : `${first.check === "permission" ? "tool" : "integrity"}-${callId}`;
  return { kind: first.check === "gate" ? "taint_gate" : "tool_approval", id, pending: gate?.pending, held: holds.map((h) => h.check) };
}

/**
 * What one answer to a prompt naming several holds means (policy/held-call.ts): a refusal carries the first hold's
 * code and text, and the gate's answer records when it was held; an allow grants the permission at most the answer's
 * scope and the gate and integrity this call only.
 */
function decideHeldSettlement(prompt: SettledPrompt, held: readonly HoldingCheck[], s: Exclude<ApprovalSettlement, { kind: "cancelled" | "withdrawn" }>, clock: Clock): SettlementAction {
  const { tool, pending } = prompt;
  const answer = decideHeldAnswer(s.kind === "answer" ? s.decision : undefined);
  if (held.includes("gate") && pending === undefined) throw new Error(`a held prompt for '${tool}' settled without its pending gate`);
  const gate = pending === undefined ? undefined : answerGatePrompt(pending, toGateAnswer(answer), clock);
  if (answer.kind === "deny" || gate?.kind === "block") return refuseHeld(tool, held[0], answer.kind === "deny" && answer.expired, gate);
  return {
    kind: "held-allowed", scope: held.includes("permission") ? answer.permission : undefined,
    events: gate?.events ?? [], source: gate === undefined ? undefined : computeGateSource(gate.events),
  };
}

/** The gate's own answer to a held prompt's: allow once, or the refusal (an expiry as an expiry). */
function toGateAnswer(answer: HeldAnswer): GatePromptAnswer {
  if (answer.kind === "allow") return { kind: "choice", index: 0 };
  return answer.expired ? { kind: "expired" } : { kind: "choice", index: undefined };
}

/** A held prompt refused: the first hold's code and text, with the gate's answer records when it was held. */
function refuseHeld(tool: string, first: HoldingCheck | undefined, expired: boolean, gate: GateAnswerOutcome | undefined): SettlementAction {
  if (first === "gate" && gate?.kind === "block") return { kind: "deny", code: expired ? "gate-timed-out" : "gate-denied", message: gate.message, events: gate.events };
  return { kind: "deny", code: expired ? "approval-timed-out" : "approval-declined", message: buildUserDeclinedMessage(tool), events: gate?.events ?? [] };
}

/** Decides what a settled prompt means for its call. */
export function decideSettlement(prompt: SettledPrompt, s: ApprovalSettlement, clock: Clock): SettlementAction {
  const { kind, tool, pending } = prompt;
  if (s.kind === "cancelled") return { kind: "stopping" };
  if (s.kind === "withdrawn") return { kind: "withdrawn" };
  if (prompt.held !== undefined) return decideHeldSettlement(prompt, prompt.held, s, clock);
  if (kind === "tool_approval") {
    const choice = decidePermissionChoice(s.kind === "answer" ? PERMISSION_INDEX[s.decision] : undefined);
    if (choice === "decline") return { kind: "deny", code: s.kind === "expired" ? "approval-timed-out" : "approval-declined", message: buildUserDeclinedMessage(tool), events: [] };
    return { kind: "permission-granted", scope: choice === "allow-once" ? "once" : choice === "allow-stage" ? "stage" : "run" };
  }
  if (pending === undefined) throw new Error(`a gate prompt for '${tool}' settled without its pending gate`);
  const answer: GatePromptAnswer = s.kind === "answer" ? { kind: "choice", index: GATE_INDEX[s.decision] } : { kind: "expired" };
  const out = answerGatePrompt(pending, answer, clock);
  if (out.kind === "block") return { kind: "deny", code: s.kind === "expired" ? "gate-timed-out" : "gate-denied", message: out.message, events: out.events };
  return { kind: "gate-allowed", events: out.events, raise: out.raiseClearanceOf, source: computeGateSource(out.events) };
}
