// The sidecar's MCP server object (the v2 SDK's `Server`, one implementation for every protocol revision it
// serves): `tools/list` is the current stage's catalogue; `tools/call` is one call to the same core as
// `/v1/tool-calls`: permission → read path → gate, the same audit and labels; an `ask` waits on the same approval
// channel until it is answered or the policy's timeout refuses it. The MCP client cannot answer prompts: nothing
// on `/mcp` does. A call whose request is cancelled (`notifications/cancelled`, the client's timeout), whose
// session ends or whose HTTP connection drops before its answer was written is withdrawn in the core: its prompt
// is closed and it never runs.
import { randomUUID } from "node:crypto";
import type { CallToolResult, Server, ServerContext } from "@modelcontextprotocol/server";
import { NEXT_STAGE_TOOL, RESULT_TOOL } from "../../api/tools.ts";
import type { CallOutcome } from "../core/call-outcomes.ts";
import type { ToolCallService } from "../core/tool-call-service.ts";
import { buildCallResult, buildTextResult } from "./call-result.ts";
import { callNextStage, listChoiceEdges, listStageMoveTools } from "./mcp-stage.ts";
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

/** Waits out an `ask` (the same prompt a `/v1` client would wait on) until the call is settled (or withdrawn). */
async function settle(service: ToolCallService, id: string, first: CallOutcome, progress: () => Promise<void>): Promise<CallOutcome | undefined> {
  let out: CallOutcome | undefined = first;
  while (out?.kind === "ask") {
    await progress();
    out = await service.wait(id, ASK_WAIT_MS);
  }
  return out;
}

/** One `tools/call`: the tool and its arguments, the signal that its client gave up, and the progress to send while it waits. */
interface McpCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly signal: AbortSignal;
  readonly progress: () => Promise<void>;
  /** The W3C trace context the request's `_meta` carried (`traceparent`, `tracestate`). */
  readonly trace?: TraceParent | undefined;
}

async function callTool(deps: McpDeps, call: McpCall): Promise<CallToolResult> {
  const { name, args, signal, progress, trace } = call;
  const id = `mcp-${randomUUID()}`;
  // The client gave up (cancelled, timed out, its session or connection closed): nobody reads the answer, so the
  // call is withdrawn at once, its prompt closed; an answer given later refuses. Submitting is synchronous up to
  // the call's record, so the withdrawal always finds it.
  const withdraw = () => void deps.service.withdraw(id, "cancelled");
  signal.addEventListener("abort", withdraw, { once: true });
  try {
    const out = await settle(deps.service, id, await deps.service.submit({ id, tool: name, args, callerRuns: false, trace }), progress);
    if (out === undefined || out.kind === "ask") throw new Error("unreachable: a settled call is never pending or forgotten");
    if (out.kind !== "run") return buildCallResult(out);
    // The core hands back only `submit_output` to a caller that cannot run tools: its output is stored, and the
    // confirmation is labelled like any result the runtime reports.
    if (name !== RESULT_TOOL) throw new Error(`unreachable: '${name}' was handed back to an MCP client`);
    const r = deps.service.reportResult(id, undefined);
    if (!r.ok) throw new Error(`unreachable: the result of '${id}' could not be labelled: ${r.message}`);
    return buildTextResult(OUTPUT_SUBMITTED, false);
  } finally {
    signal.removeEventListener("abort", withdraw);
  }
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
export function buildServer(sdk: ServerSdk, deps: McpDeps): Server {
  const server = new sdk.Server(SERVER_INFO, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler("tools/list", async () => {
    await deps.service.gateway?.ready();
    const { stage } = deps.service.currentStage();
    return { tools: [...listStageTools(deps.service.policy(), stage, deps.service.gateway), ...listStageMoveTools(stage)] };
  });
  server.setRequestHandler("tools/call", (req, ctx) => {
    if (req.params.name === NEXT_STAGE_TOOL && listChoiceEdges(deps.service.currentStage().stage).length > 0) {
      const notifyCaller = () => ctx.mcpReq.notify({ method: "notifications/tools/list_changed" });
      return callNextStage({ service: deps.service, notifyCaller }, req.params.arguments ?? {});
    }
    const token = req.params._meta?.progressToken;
    let tick = 0;
    const progress = async () => {
      // A prompt can wait longer than a client's request timeout: progress lets it keep waiting.
      if (token !== undefined) await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: ++tick, message: "waiting for approval" } });
    };
    return callTool(deps, { name: req.params.name, args: req.params.arguments ?? {}, signal: gaveUpSignal(ctx), progress, trace: readTraceHeaders(req.params._meta ?? {}) });
  });
  return server;
}
