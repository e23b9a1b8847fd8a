// The sidecar's MCP server object (the v2 SDK's `Server`, one implementation for every protocol revision it
// serves): `tools/list` is the current stage's catalogue; `tools/call` is one call to the same core as
// `/v1/tool-calls`: permission → read path → gate, the same audit and labels; an `ask` waits on the same approval
// channel, held here only as long as the client can wait (./pending-prompt.ts): on 2026-07-28 a bounded leg, then
// `input_required`, whose retry is the same call; on 2025-era revisions until it is settled, or, where the policy
// sets `promptHoldSeconds` and the client has a session, that long and then a pending result that `wait_for_approval`
// collects (the session's end withdraws it: a pending call is run only while its client can still collect it). The MCP client
// cannot answer prompts: nothing on `/mcp` does. A call whose request is cancelled (`notifications/cancelled`, the
// client's timeout), whose session ends or whose HTTP connection drops while it is held is withdrawn in the core:
// its prompt is closed and it never runs.
import { randomUUID } from "node:crypto";
import type { CallToolResult, InputRequiredResult, RequestStateCodec, Server, ServerContext } from "@modelcontextprotocol/server";
import { NEXT_STAGE_TOOL, RESULT_TOOL } from "../../api/tools.ts";
import { PENDING_META_KEY } from "../../api/mcp-meta.ts";
import { buildDeny, type CallOutcome } from "../core/call-outcomes.ts";
import type { ToolCallService } from "../core/tool-call-service.ts";
import { buildCallResult, buildTextResult } from "./call-result.ts";
import { callNextStage, listChoiceEdges, listStageMoveTools } from "./mcp-stage.ts";
import {
  buildPendingMeta, buildPendingResult, buildUnknownPendingResult, buildWaitApprovalTool, computeHoldMs, isCallState,
  RETRY_GRACE_MS, WAIT_APPROVAL_TOOL, type CallState, type McpEra, type PendingCalls,
} from "./pending-prompt.ts";
import { listStageTools } from "./tool-catalog.ts";
import { readTraceHeaders, type TraceParent } from "../../tracing/trace-context.ts";

/** How the sidecar names itself to MCP clients. */
const SERVER_INFO = { name: "leviath-sidecar", version: "0.1.0" } as const;
/** How long one wait on a pending prompt lasts before it is renewed (and a progress notification sent). */
const ASK_WAIT_MS = 15_000;
/** The text of a confirmed `submit_output`. */
const OUTPUT_SUBMITTED = "Output submitted.";

/** What the MCP front-end works with. */
export interface McpDeps {
  readonly service: ToolCallService;
}

/** What one server of the endpoint works with: the core, its era, and what the endpoint keeps across requests. */
export interface McpServerParts extends McpDeps {
  readonly era: McpEra;
  /** The prompts a 2025-era client was answered pending for, across its sessions. */
  readonly pending: PendingCalls;
  /** Seals and checks the 2026-07-28 `requestState` (HMAC under a key of this process). */
  readonly stateCodec: RequestStateCodec<CallState>;
}

/** Milliseconds, monotonic. */
const now = () => performance.now();

/**
 * Holds a call waiting on a prompt (the same prompt a `/v1` client would wait on) until it is settled, withdrawn or
 * `holdMs` passed (undefined: no bound); the outcome is still `ask` when the bound ended the hold. A call whose
 * prompt was answered is being decided again and run: that is waited out whatever the bound, as any call's run is.
 */
async function holdAsk(service: ToolCallService, id: string, first: CallOutcome | undefined, how: { progress: () => Promise<void>; holdMs: number | undefined }): Promise<CallOutcome | undefined> {
  const { progress, holdMs } = how;
  const end = holdMs === undefined ? Infinity : now() + holdMs;
  let out = first;
  while (out?.kind === "ask") {
    const left = service.isPromptPending(out.body.approval.id) ? end - now() : ASK_WAIT_MS;
    if (left <= 0) return out;
    await progress();
    out = await service.wait(id, Math.min(ASK_WAIT_MS, left));
  }
  return out;
}

/** One `tools/call`: the tool and its arguments, the signal that its client gave up, and the progress to send while it waits. */
interface McpCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly signal: AbortSignal;
  readonly progress: () => Promise<void>;
  /** The call a 2026-07-28 retry is for (its verified `requestState`); absent: a new call. */
  readonly resume?: string | undefined;
  /** The W3C trace context the request's `_meta` carried (`traceparent`, `tracestate`). */
  readonly trace?: TraceParent | undefined;
  /** The 2025-era session the request came in (absent: a stateless exchange, or 2026-07-28). */
  readonly session?: string | undefined;
}

/** A call's answer on the wire: its result, or, while it still waits on a prompt, the era's way of saying so. */
async function answerOutcome(parts: McpServerParts, call: { id: string; name: string; session: string | undefined }, out: CallOutcome | undefined): Promise<CallToolResult | InputRequiredResult> {
  const { id, name, session } = call;
  if (out === undefined) throw new Error("unreachable: a held call is never forgotten");
  if (out.kind === "ask") {
    if (parts.era === "legacy") {
      if (session === undefined) throw new Error("unreachable: a 2025-era call outside a session is held until settled");
      parts.pending.remember(out.body, session);
      return buildPendingResult(out.body);
    }
    // The client is to retry: one that does not within the grace gave up, and its call is withdrawn.
    parts.service.renewDeadline(id, Date.now() + (holdMsOf(parts, session) ?? 0) + RETRY_GRACE_MS);
    const requestState = await parts.stateCodec.mint({ call: id });
    return { resultType: "input_required", requestState, _meta: { [PENDING_META_KEY]: buildPendingMeta(out.body) } };
  }
  if (out.kind !== "run") return buildCallResult(out);
  // The core hands back only `submit_output` to a caller that cannot run tools: its output is stored, and the
  // confirmation is labelled like any result the runtime reports.
  if (name !== RESULT_TOOL) throw new Error(`unreachable: '${name}' was handed back to an MCP client`);
  const r = parts.service.reportResult(id, undefined);
  if (!r.ok) throw new Error(`unreachable: the result of '${id}' could not be labelled: ${r.message}`);
  return buildTextResult(OUTPUT_SUBMITTED, false);
}

/** The refusal of a call the core no longer remembers (a retry or a wait for it): deciding it afresh could run it twice. */
function refuseForgotten(id: string, tool: string): CallToolResult {
  const out = buildDeny(id, tool, "unknown-call", id);
  if (out.kind !== "deny") throw new Error("unreachable: a refusal is a deny");
  return buildCallResult(out);
}

/**
 * How long this era holds a call on a prompt under the policy in force. A 2025-era call outside a session is held
 * until it is settled, as without `promptHoldSeconds`: answered pending, nothing would tell the sidecar its client
 * had gone, and a later allow would run a call nobody collects.
 */
function holdMsOf(parts: McpServerParts, session: string | undefined): number | undefined {
  if (parts.era === "legacy" && session === undefined) return undefined;
  return computeHoldMs(parts.era, parts.service.policy().runPolicy.limits.promptHoldSeconds);
}

async function callTool(parts: McpServerParts, call: McpCall): Promise<CallToolResult | InputRequiredResult> {
  const { name, args, signal, progress, resume, trace, session } = call;
  const service = parts.service;
  // A retry whose call the core no longer remembers is refused: deciding it afresh could run it a second time.
  if (resume !== undefined && service.get(resume) === undefined) return refuseForgotten(resume, name);
  const id = resume ?? `mcp-${randomUUID()}`;
  // A retry is the client still there: its leg is held, and the grace after it starts again.
  if (resume !== undefined) service.renewDeadline(resume, Date.now() + (holdMsOf(parts, session) ?? 0) + RETRY_GRACE_MS);
  // The client gave up (cancelled, timed out, its session or connection closed) while the call is held: nobody
  // reads the answer, so the call is withdrawn at once, its prompt closed; an answer given later refuses.
  // Submitting is synchronous up to the call's record, so the withdrawal always finds it. Once answered pending
  // (or input_required) the call no longer depends on this request.
  const withdraw = () => void service.withdraw(id, "cancelled");
  signal.addEventListener("abort", withdraw, { once: true });
  try {
    // A retry submits the same id: the core answers what the call has come to, and never decides it twice.
    const out = await holdAsk(service, id, await service.submit({ id, tool: name, args, callerRuns: false, trace }), { progress, holdMs: holdMsOf(parts, session) });
    return await answerOutcome(parts, { id, name, session }, out);
  } finally {
    signal.removeEventListener("abort", withdraw);
  }
}

/** `wait_for_approval` (2025 era): waits on a prompt a pending result named, and answers its call as it stands then. */
async function waitApproval(parts: McpServerParts, args: Record<string, unknown>, at: { progress: () => Promise<void>; session: string }): Promise<CallToolResult> {
  const approval = typeof args["approval"] === "string" ? args["approval"] : "";
  const found = parts.pending.find(approval);
  if (found === undefined) return buildUnknownPendingResult(approval);
  const current = parts.service.get(found.call);
  if (current === undefined) return refuseForgotten(found.call, found.tool);
  const out = await holdAsk(parts.service, found.call, current, { progress: at.progress, holdMs: holdMsOf(parts, at.session) });
  return (await answerOutcome(parts, { id: found.call, name: found.tool, session: at.session }, out)) as CallToolResult;
}

/** The signal that the client of this request gave up: the request cancelled, or the HTTP exchange carrying its answer dropped. */
function gaveUpSignal(ctx: ServerContext): AbortSignal {
  const dropped = ctx.http?.req?.signal;
  return dropped === undefined ? ctx.mcpReq.signal : AbortSignal.any([ctx.mcpReq.signal, dropped]);
}

/** The SDK's server side, loaded on the first `/mcp` request: it costs a sidecar that never serves MCP CPU at start. */
export const loadServerSdk = () => import("@modelcontextprotocol/server");
export type ServerSdk = Awaited<ReturnType<typeof loadServerSdk>>;

/**
 * A server for one session, one stateless request or one 2026-era exchange: every one answers from the same core.
 */
export function buildServer(sdk: ServerSdk, parts: McpServerParts): Server {
  const server = new sdk.Server(SERVER_INFO, { capabilities: { tools: { listChanged: true } }, requestState: { verify: parts.stateCodec.verify } });
  const service = parts.service;
  server.setRequestHandler("tools/list", async (_req, ctx) => {
    await service.gateway?.ready();
    const { stage } = service.currentStage();
    const hold = parts.era === "legacy" && ctx.sessionId !== undefined ? service.policy().runPolicy.limits.promptHoldSeconds : undefined;
    const wait = hold === undefined ? [] : [buildWaitApprovalTool(hold)];
    return { tools: [...listStageTools(service.policy(), stage, service.gateway), ...listStageMoveTools(stage), ...wait] };
  });
  server.setRequestHandler("tools/call", (req, ctx) => {
    if (req.params.name === NEXT_STAGE_TOOL && listChoiceEdges(service.currentStage().stage).length > 0) {
      const notifyCaller = () => ctx.mcpReq.notify({ method: "notifications/tools/list_changed" });
      return callNextStage({ service, notifyCaller }, req.params.arguments ?? {});
    }
    const token = req.params._meta?.progressToken;
    let tick = 0;
    const progress = async () => {
      // A prompt can wait longer than a client's request timeout: progress lets it keep waiting.
      if (token !== undefined) await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: ++tick, message: "waiting for approval" } });
    };
    const session = parts.era === "legacy" ? ctx.sessionId : undefined;
    if (req.params.name === WAIT_APPROVAL_TOOL && session !== undefined && holdMsOf(parts, session) !== undefined) return waitApproval(parts, req.params.arguments ?? {}, { progress, session });
    // The SDK verified a 2026-07-28 retry's requestState (its HMAC) before this handler was entered.
    const state = parts.era === "modern" ? ctx.mcpReq.requestState() : undefined;
    const resume = isCallState(state) ? state.call : undefined;
    return callTool(parts, { name: req.params.name, args: req.params.arguments ?? {}, signal: gaveUpSignal(ctx), progress, resume, trace: readTraceHeaders(req.params._meta ?? {}), session });
  });
  return server;
}
