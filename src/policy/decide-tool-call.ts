// Permission and gate combined (DESIGN.md §5): the permission is resolved first (cheaper, and it avoids
// asking about the taint of a call that will be refused anyway); a call runs only if both allow. Unlike
// upstream, a `deny` refuses before the gate is evaluated, so no `YoloAutoApprove` is ever recorded for
// a call that then did not run, and `submit_output` is subject to `deny` like every other tool.
import { evaluateGate } from "./gate.ts";
import type { GateInput, GateOutcome, PendingGate } from "./gate.ts";
import { toPromptTimeout } from "./gate-messages.ts";
import type { GatePrompt } from "./gate-messages.ts";
import type { AuditEvent } from "./audit.ts";
import { buildPermissionDeniedMessage, buildUserDeclinedMessage, resolveToolPermission } from "./permissions.ts";
import type { PermissionInputs, PermissionMap, ResolvedPermission } from "./permissions.ts";

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
}

/** A tool-approval prompt the caller must raise before the call can go on. */
export interface PermissionPrompt {
  readonly tool: string;
  readonly options: readonly string[];
  /** Seconds after which the caller declines it; undefined waits forever. */
  readonly timeoutSeconds: number | undefined;
}

/** What the sidecar does with the call. */
export type ToolCallDecision =
  | { readonly kind: "run"; readonly permission: ResolvedPermission; readonly gate: GateOutcome; readonly events: readonly AuditEvent[] }
  | {
    readonly kind: "refuse";
    readonly reason: "permission-denied" | "approval-unavailable" | "gate-blocked";
    readonly message: string;
    readonly permission: ResolvedPermission;
    readonly gate: GateOutcome | undefined;
    readonly events: readonly AuditEvent[];
  }
  | { readonly kind: "ask-permission"; readonly permission: ResolvedPermission; readonly prompt: PermissionPrompt; readonly events: readonly AuditEvent[] }
  | {
    readonly kind: "ask-gate";
    readonly permission: ResolvedPermission;
    readonly gate: GateOutcome;
    readonly prompt: GatePrompt;
    readonly pending: PendingGate;
    readonly events: readonly AuditEvent[];
  };

function launchFor(input: ToolCallInput): PermissionMap {
  // A yolo run is `--yolo`: every `ask` becomes `allow` (a specific launch entry still wins over `*`).
  return input.gate.mode === "yolo" ? { "*": "allow", ...input.permissions.launch } : { ...input.permissions.launch };
}

/** Decides one call: permission first (deny refuses, ask needs approval), then the taint gate. */
export function decideToolCall(input: ToolCallInput): ToolCallDecision {
  const tool = input.gate.tool;
  const permission = resolveToolPermission({ ...input.permissions, tool, launch: launchFor(input) });
  if (permission.permission === "deny") {
    return { kind: "refuse", reason: "permission-denied", message: buildPermissionDeniedMessage(tool), permission, gate: undefined, events: [] };
  }
  if (permission.permission === "ask" && input.permissionApproved !== true) {
    if (input.gate.mode === "headless") {
      // Nobody can ever answer: refuse rather than wait, as for an approval nobody gave.
      return { kind: "refuse", reason: "approval-unavailable", message: buildUserDeclinedMessage(tool), permission, gate: undefined, events: [] };
    }
    return {
      kind: "ask-permission", permission, events: [],
      prompt: { tool, options: PERMISSION_PROMPT_OPTIONS, timeoutSeconds: toPromptTimeout(input.gate.promptTimeoutSeconds) },
    };
  }
  const gate = evaluateGate(input.gate);
  switch (gate.kind) {
    case "run":
    case "waived":
      return { kind: "run", permission, gate, events: gate.events };
    case "block":
      return { kind: "refuse", reason: "gate-blocked", message: gate.message, permission, gate, events: gate.events };
    case "prompt":
      return { kind: "ask-gate", permission, gate, prompt: gate.prompt, pending: gate.pending, events: gate.events };
  }
}
