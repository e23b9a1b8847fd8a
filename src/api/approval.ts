import { z } from "zod";
import { ConditionSchema } from "./status.ts";

/**
 * A person's answer to one pending prompt. `allowForStage` applies to tool-permission prompts only; a taint-gate
 * prompt reads it as `allowOnce`. Anything the sidecar cannot map is a deny (fail closed, as upstream).
 */
export const APPROVAL_DECISIONS = ["allowOnce", "allowForStage", "allowForRun", "deny"] as const;
/** An approval decision. */
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];

/**
 * The Approval spec: the answer to one pending gate or permission prompt of one Run. A separate kind so RBAC can
 * grant "may approve" without "may edit runs".
 */
export const ApprovalSpecSchema = z.strictObject({
  runRef: z.strictObject({ name: z.string().min(1).max(253).describe("The Run, in the Approval's namespace.") }).describe("The Run whose prompt this answers."),
  approvalId: z.string().min(1).max(256).describe("The id of the pending approval, as listed in the Run's status.pendingApprovals."),
  decision: z.enum(APPROVAL_DECISIONS)
    .describe("allowOnce: this call; allowForStage: this tool for the rest of the stage (tool-permission prompts; a taint-gate prompt reads it as allowOnce); allowForRun: for the rest of the run; deny."),
  reason: z.string().max(4096).optional().describe("Free text kept with the audit record."),
  approvedBy: z.string().min(1).max(512).optional()
    .describe("Who answered: set at admission from the requesting user (a value that differs is refused), never taken on trust."),
}).describe("The answer to one pending prompt of one Run; immutable once created.");
/** The Approval spec. */
export type ApprovalSpec = z.infer<typeof ApprovalSpecSchema>;

/** Condition types on an Approval, written by the controller. */
export const APPROVAL_CONDITION = {
  /** Bound to the Run's uid (owner reference and label), or why not. */
  bound: "Bound",
  /** Whether the Run has a pending prompt with this Approval's id. */
  matched: "Matched",
} as const;

/** Reasons of the Approval conditions. */
export const APPROVAL_REASON = {
  bound: "BoundToRun",
  runNotFound: "RunNotFound",
  stale: "PredatesRun",
  invalid: "InvalidSpec",
  pending: "PendingPrompt",
  noPendingPrompt: "NoPendingPrompt",
  consumed: "Consumed",
  /** Consumed by the sidecar without answering anything: the prompt was gone (answered, expired, withdrawn). */
  notApplied: "NotApplied",
} as const;

/** How the sidecar's consumed message starts when the answer settled its prompt (`applied: allowOnce`). */
export const APPLIED_MESSAGE_PREFIX = "applied: ";

/** The Approval status: `consumed*` and `message` written by the sidecar that applied it, conditions by the controller. */
export const ApprovalStatusSchema = z.strictObject({
  consumed: z.boolean().optional().describe("True once the run's sidecar applied the answer."),
  consumedAt: z.string().optional().describe("RFC 3339 time the sidecar applied it."),
  message: z.string().max(4096).optional().describe("What the sidecar made of it."),
  conditions: z.array(ConditionSchema).optional().describe("Bound (to the Run's uid) and Matched (a pending prompt has this id)."),
}).describe("Written by the controller (conditions) and the Run's sidecar (consumed).");
/** The Approval status. */
export type ApprovalStatus = z.infer<typeof ApprovalStatusSchema>;

/**
 * One answer in a Run's approval relay (the ConfigMap `<run>-approvals`, key `a-<Approval uid>`): what the Approval
 * controller read from an Approval bound to that Run. The sidecar takes only the name and uid from it and reads
 * that Approval itself (the relay is a ConfigMap others may write), answering with what the Approval says.
 */
export const ApprovalRelayEntrySchema = z.strictObject({
  approval: z.string().min(1).max(253).describe("The Approval's name, whose status the sidecar marks consumed."),
  approvalId: ApprovalSpecSchema.shape.approvalId,
  decision: ApprovalSpecSchema.shape.decision,
  reason: ApprovalSpecSchema.shape.reason,
  approvedBy: ApprovalSpecSchema.shape.approvedBy,
});
/** An answer as relayed. */
export type ApprovalRelayEntry = z.infer<typeof ApprovalRelayEntrySchema>;

/** The relay ConfigMap's keys: the Run uid it was written for, and the prefix of each answer's key. */
export const APPROVAL_RELAY_KEY = { runUid: "run-uid", answerPrefix: "a-" } as const;

/** Most answers one relay holds (as many as a Run may have prompts pending). */
export const MAX_RELAYED_ANSWERS = 32;
