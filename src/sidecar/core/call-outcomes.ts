// What the call-handling core answers, free of any transport: an allow (executed here), a run (the runtime
// executes), an ask (a prompt is pending) or a refusal `{decision: "deny", code, message}` with the text the
// model is given as the tool result. Each front-end (http/, mcp/) maps an outcome to its own wire: the HTTP
// statuses live in http/call-status.ts only.
import type { DecisionSourceLabel } from "../../metrics/sidecar-metrics.ts";
import type { Level } from "../../policy/levels.ts";
import type { PendingApproval } from "./approvals.ts";

/** Where a result is stored in the runtime's context: its identity for labels and evictions. */
export interface EntryRef {
  readonly region: string;
  readonly id: string;
}

/** A refusal. */
export interface DenyBody {
  readonly id: string;
  readonly tool: string;
  readonly decision: "deny";
  /** Stable, machine-readable. */
  readonly code: string;
  /** The tool result for the model (`[denied] …`, `[blocked] …`, `[error] …`, `[unavailable] …`). */
  readonly message: string;
}

/** A call the sidecar executed (file tools, shell). */
export interface AllowBody {
  readonly id: string;
  readonly tool: string;
  readonly decision: "allow";
  readonly result: string;
  /** The result is an error text (the call ran but failed, e.g. a missing file). */
  readonly isError: boolean;
  readonly entry: EntryRef;
  /** The label the sidecar gave the result. */
  readonly label: Level;
  /** The context taint after labelling it. */
  readonly taint: Level;
  readonly shell?: { readonly exitCode: number | null; readonly timedOut: boolean };
}

/** A call the runtime executes; it reports the result on `/v1/tool-calls/{id}/result`. */
export interface RunBody {
  readonly id: string;
  readonly tool: string;
  readonly decision: "run";
  readonly target?: string;
}

/** A call waiting for an answer. */
export interface AskBody {
  readonly id: string;
  readonly tool: string;
  readonly decision: "ask";
  readonly approval: PendingApproval;
}

/**
 * Why a call was refused, as a front-end needs to tell it apart: the request itself was malformed, the policy
 * refused it, it reused an id, or the sidecar could not decide it now (stopping, full, its record unwritable).
 */
export type RefusalKind = "invalid" | "refused" | "conflict" | "unavailable";

/** The answer to one call. */
export type CallOutcome =
  | { readonly kind: "allow"; readonly body: AllowBody }
  | { readonly kind: "run"; readonly body: RunBody }
  | { readonly kind: "ask"; readonly body: AskBody }
  | { readonly kind: "deny"; readonly refusal: RefusalKind; readonly body: DenyBody; readonly source?: DecisionSourceLabel };

/**
 * A refusal (`refused` by the policy unless said otherwise). `source` is the audit's decision source when the
 * refusal was a recorded decision; it rides beside the body (MCP puts it in `_meta`), not in the `/v1` body.
 */
export function buildDeny(id: string, tool: string, code: string, message: string, refusal: RefusalKind = "refused", source?: DecisionSourceLabel): CallOutcome {
  return { kind: "deny", refusal, body: { id, tool, decision: "deny", code, message }, ...(source === undefined ? {} : { source }) };
}

/** `[unavailable] …`: the stage does not offer the tool. */
export function buildUnavailableMessage(tool: string, stage: string): string {
  return `[unavailable] Tool '${tool}' is not available in stage '${stage}'.`;
}

/** `[error] …`: the arguments do not fit the tool. */
export function buildInvalidArgumentsMessage(tool: string, detail: string): string {
  return `[error] Invalid arguments for '${tool}': ${detail}`;
}

/** `[denied] …`: the decision could not be recorded, so the call does not run. */
export function buildAuditFailedMessage(tool: string): string {
  return `[denied] Tool '${tool}' was not run: its audit record could not be written.`;
}

/** `[denied] …`: the sidecar stopped before the call was settled. */
export function buildStoppingMessage(tool: string): string {
  return `[denied] Tool '${tool}' was not run: the sidecar is stopping.`;
}

/** `[denied] …`: the client gave up waiting before the sidecar got to the call (it was told the call did not run). */
export function buildGaveUpMessage(tool: string): string {
  return `[denied] Tool '${tool}' was not run: its client had stopped waiting for the answer.`;
}

/** `[denied] …`: too many calls are pending; the call is refused rather than held in memory. */
export function buildPendingFullMessage(tool: string, maxCalls: number): string {
  return `[denied] Tool '${tool}' was not run: ${maxCalls} calls are already pending (or their arguments fill the pending budget); settle some and retry.`;
}
