// How a call waiting on a prompt reaches an MCP client that cannot wait as long as a person may take (issue 43):
// the call is held only for a bound, then answered without having run, and the client comes back for it.
// - On the 2026-07-28 revision: an `input_required` result carrying `requestState` (SEP-2322's multi-round-trip
//   requests), which the client echoes on its retry of the same `tools/call`; the state names the call, so the
//   retry finds the one call the core remembers and never decides or runs it a second time.
// - On the 2025-era revisions, where the policy sets `limits.promptHoldSeconds`: a pending tool result naming the
//   prompt (`_meta["leviath.dev/pending"]`), and the `wait_for_approval` tool, which waits on it for the same bound
//   and answers the call's own result once it was answered (and ran, once).
// Pure except for {@link PendingCalls}, the front-end's memory of which call a prompt it named belongs to.
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import { PENDING_META_KEY, type PendingMeta } from "../../api/mcp-meta.ts";
import type { AskBody } from "../core/call-outcomes.ts";

/** The tool a 2025-era client calls to collect a call it was answered pending for. */
export const WAIT_APPROVAL_TOOL = "wait_for_approval";

/**
 * How long one leg of a 2026-07-28 `tools/call` holds a prompt before `input_required`, unless the policy sets it:
 * below the v2 SDK client's default request timeout (60 s), so a client left at its defaults never gives up on a leg.
 */
export const DEFAULT_MODERN_HOLD_SECONDS = 50;

/**
 * How long after an `input_required` answer (past the leg's hold) a 2026-07-28 client has to retry before the sidecar
 * takes it for gone and withdraws the call: a client that stopped retrying (the SDK's driver stops after
 * `inputRequired.maxRounds`) must not have its call run by a later allow that nobody collects.
 */
export const RETRY_GRACE_MS = 10_000;

/** How long a `requestState` stays valid: longer than any prompt waits (the call's record bounds it anyway). */
export const REQUEST_STATE_TTL_SECONDS = 30 * 24 * 3600;

/** What the sidecar seals into a 2026-07-28 `requestState`: the call the retry is for. */
export interface CallState {
  readonly call: string;
}

/** Whether a decoded `requestState` payload is one the sidecar minted (the codec proved its integrity already). */
export function isCallState(value: unknown): value is CallState {
  return typeof value === "object" && value !== null && typeof (value as { call?: unknown }).call === "string";
}

/** The protocol era of one MCP server: `modern` is 2026-07-28 (per request), `legacy` the `initialize` revisions. */
export type McpEra = "modern" | "legacy";

/**
 * How long a call waiting on a prompt is held on this era, in milliseconds: on 2026-07-28 each leg is bounded
 * (the policy's `promptHoldSeconds`, else {@link DEFAULT_MODERN_HOLD_SECONDS}); on 2025-era revisions only where the
 * policy sets it (undefined: held until the prompt is settled, as before).
 */
export function computeHoldMs(era: McpEra, promptHoldSeconds: number | undefined): number | undefined {
  if (era === "modern") return (promptHoldSeconds ?? DEFAULT_MODERN_HOLD_SECONDS) * 1000;
  return promptHoldSeconds === undefined ? undefined : promptHoldSeconds * 1000;
}

/** The `_meta` entry of a call answered without having run: its prompt, the call, and when the prompt expires. */
export function buildPendingMeta(ask: AskBody): PendingMeta {
  const a = ask.approval;
  return { approval: a.id, call: ask.id, tool: ask.tool, kind: a.kind, ...(a.expiresAt === undefined ? {} : { expiresAt: a.expiresAt }) };
}

/** The text a model reads for a call answered pending (2025 era): nothing ran, and how to collect it. */
export function buildPendingText(ask: AskBody): string {
  const a = ask.approval;
  const until = a.expiresAt === undefined ? "" : ` It is refused if nobody answers by ${a.expiresAt}.`;
  return `[pending] The call to '${ask.tool}' has not run: it waits for approval '${a.id}'.${until} ` +
    `Call ${WAIT_APPROVAL_TOOL} with approval '${a.id}' to wait for the answer and get the call's result.`;
}

/**
 * A 2025-era client's pending result: the prompt named in text and in `_meta`. Not `isError`: the call has not
 * failed, and a client may put its own words in place of an error's content (the Agents SDK tells its model only
 * "An error occurred while running the tool"), so the model would never learn to collect it.
 */
export function buildPendingResult(ask: AskBody): CallToolResult {
  return { content: [{ type: "text", text: buildPendingText(ask) }], isError: false, _meta: { [PENDING_META_KEY]: buildPendingMeta(ask) } };
}

/** The result of `wait_for_approval` naming a prompt this front-end never answered pending. */
export function buildUnknownPendingResult(approval: string): CallToolResult {
  return { content: [{ type: "text", text: `[error] no call answered pending waits for approval '${approval}'` }], isError: true };
}

/** `wait_for_approval` as `tools/list` offers it (only to 2025-era clients, only where the policy holds for a bound). */
export function buildWaitApprovalTool(holdSeconds: number): Tool {
  return {
    name: WAIT_APPROVAL_TOOL,
    description: `Waits up to ${holdSeconds} seconds for the answer to an approval a pending tool result named, and returns that call's ` +
      "result once it was approved and ran (it runs once, however often this is called), its refusal if it was denied, or " +
      "the pending result again while nobody has answered (call it again).",
    inputSchema: { type: "object", properties: { approval: { type: "string", description: "The approval id the pending result named." } }, required: ["approval"] },
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  };
}

/** Most prompts remembered for `wait_for_approval` (the oldest forgotten first: a late wait then reads as unknown). */
const MAX_PENDING_CALLS = 1024;

/**
 * Which call each prompt a 2025-era client was answered pending for belongs to, and the session it was last named
 * in: a client may collect it from any of its sessions, and the end of the session that last named it withdraws it.
 */
export class PendingCalls {
  readonly #byApproval = new Map<string, { readonly call: string; readonly tool: string; readonly session: string }>();

  /** Remembers that `ask`'s prompt was named to a client in `session`. */
  remember(ask: AskBody, session: string): void {
    this.#byApproval.delete(ask.approval.id);
    this.#byApproval.set(ask.approval.id, { call: ask.id, tool: ask.tool, session });
    if (this.#byApproval.size > MAX_PENDING_CALLS) this.#byApproval.delete(this.#byApproval.keys().next().value!);
  }

  /** The call a named prompt belongs to. */
  find(approval: string): { readonly call: string; readonly tool: string } | undefined {
    return this.#byApproval.get(approval);
  }

  /** The calls whose prompts `session` was the last to be named (what its end withdraws, when still unsettled). */
  callsOf(session: string): string[] {
    return [...this.#byApproval.values()].filter((p) => p.session === session).map((p) => p.call);
  }
}
