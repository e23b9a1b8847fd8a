// The bodies of `/v1/tool-calls` answers. A refusal is always `{decision: "deny", code, message}` with the
// text the model is given as the tool result; a 2xx is an allow (executed here), a run (the runtime executes)
// or an ask (a prompt is pending).
import type { Level } from "../policy/levels.ts";
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

/** An answer with its HTTP status. */
export type CallResponse =
  | { readonly status: 200; readonly body: AllowBody | RunBody }
  | { readonly status: 202; readonly body: AskBody }
  | { readonly status: 400 | 403 | 404 | 409 | 503; readonly body: DenyBody };

/** A refusal with its status (403 unless said otherwise). */
export function buildDeny(id: string, tool: string, code: string, message: string, status: 400 | 403 | 404 | 409 | 503 = 403): CallResponse {
  return { status, body: { id, tool, decision: "deny", code, message } };
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
