// The sidecar as an MCP server (streamable HTTP at `/mcp`: a client that initializes keeps one SDK server and
// transport for its session, a request without one gets its own). `tools/list` is the
// current stage's catalogue; `tools/call` is one call to the same core as `/v1/tool-calls`: permission → read
// path → gate, the same audit and labels; an `ask` waits on the same approval channel until it is answered or
// the policy's timeout refuses it. The MCP client cannot answer prompts: nothing on `/mcp` does. A call whose
// request is cancelled (`notifications/cancelled`, the client's timeout) or whose session or connection closes
// is withdrawn in the core: its prompt is closed and it never runs. Every refusal of a call is the core's, so it
// is audited and counted like one on `/v1`; what is answered here alone is the protocol's (a malformed JSON-RPC
// request or params the SDK's schema refuses, an unknown method or session), and no call exists for those.
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { RESULT_TOOL } from "../../api/tools.ts";
import type { CallOutcome } from "../core/call-outcomes.ts";
import { onResponseDropped } from "../http/response-dropped.ts";
import type { ToolCallService } from "../core/tool-call-service.ts";
import { buildCallResult, buildTextResult } from "./call-result.ts";
import { listStageTools } from "./tool-catalog.ts";

/** The path of the MCP endpoint. */
export const MCP_PATH = "/mcp";
/** How the sidecar names itself to MCP clients. */
const SERVER_INFO = { name: "leviath-sidecar", version: "0.1.0" } as const;
/** How long one wait on a pending prompt lasts before it is renewed (and a progress notification sent). */
const ASK_WAIT_MS = 15_000;

/** What the MCP front-end works with. */
export interface McpDeps {
  readonly service: ToolCallService;
}

/** The text of a confirmed `submit_output`. */
const OUTPUT_SUBMITTED = "Output submitted.";

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
}

async function callTool(deps: McpDeps, call: McpCall): Promise<CallToolResult> {
  const { name, args, signal, progress } = call;
  const id = `mcp-${randomUUID()}`;
  // The client gave up (cancelled, timed out, its session or connection closed): nobody reads the answer, so the
  // call is withdrawn at once, its prompt closed; an answer given later refuses. Submitting is synchronous up to
  // the call's record, so the withdrawal always finds it.
  const withdraw = () => void deps.service.withdraw(id, "cancelled");
  signal.addEventListener("abort", withdraw, { once: true });
  try {
    const out = await settle(deps.service, id, await deps.service.submit({ id, tool: name, args, callerRuns: false }), progress);
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

/** The SDK's server side, loaded on the first `/mcp` request: it costs a sidecar that never serves MCP 0.6 s of CPU at start. */
type ServerSdk = Awaited<ReturnType<typeof loadServerSdk>>;
async function loadServerSdk() {
  const [index, http, types] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]);
  return { Server: index.Server, Transport: http.StreamableHTTPServerTransport, CallToolRequestSchema: types.CallToolRequestSchema, ListToolsRequestSchema: types.ListToolsRequestSchema };
}

/** The calls a server is serving, by JSON-RPC id: each can be aborted when the connection carrying its answer drops. */
type InFlight = Map<string | number, AbortController>;

function buildServer(sdk: ServerSdk, deps: McpDeps, inFlight: InFlight): Server {
  const { CallToolRequestSchema, ListToolsRequestSchema } = sdk;
  const server = new sdk.Server(SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    await deps.service.gateway?.ready();
    const { stage } = deps.service.currentStage();
    return { tools: listStageTools(deps.service.policy(), stage, deps.service.gateway) };
  });
  server.setRequestHandler(CallToolRequestSchema, (req, extra) => {
    const token = req.params._meta?.progressToken;
    let tick = 0;
    const progress = async () => {
      // A prompt can wait longer than a client's request timeout: progress lets it keep waiting.
      if (token !== undefined) await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: ++tick, message: "waiting for approval" } });
    };
    const dropped = new AbortController();
    inFlight.set(extra.requestId, dropped);
    const done = () => {
      if (inFlight.get(extra.requestId) === dropped) inFlight.delete(extra.requestId);
    };
    return callTool(deps, { name: req.params.name, args: req.params.arguments ?? {}, signal: AbortSignal.any([extra.signal, dropped.signal]), progress }).finally(done);
  });
  return server;
}

/** Most MCP sessions held at once: a new one past it ends the oldest (only the runtime, holding the token, opens any). */
export const MAX_MCP_SESSIONS = 8;
/** The header naming a session (MCP's streamable HTTP transport). */
const SESSION_HEADER = "mcp-session-id";

/** One session: its SDK server and transport, kept across the requests of one client. */
interface Session {
  readonly server: Server;
  readonly transport: InstanceType<ServerSdk["Transport"]>;
  readonly inFlight: InFlight;
}

/**
 * Aborts the calls of a session's POST whose connection closes before their answers were written. The sidecar
 * keeps no event store, so such an answer can never be delivered (nor resumed): the client has lost the call.
 */
function abortOnDrop(res: ServerResponse, body: unknown, inFlight: InFlight): void {
  onResponseDropped(res, () => {
    for (const m of Array.isArray(body) ? body : [body]) {
      const id = typeof m === "object" && m !== null ? (m as { id?: unknown }).id : undefined;
      if (typeof id === "string" || typeof id === "number") inFlight.get(id)?.abort();
    }
  });
}

function isInitialize(body: unknown): boolean {
  return typeof body === "object" && body !== null && !Array.isArray(body) && (body as { method?: unknown }).method === "initialize";
}

/**
 * Registers `/mcp` on the app (behind the same request guard as `/v1`: Host, no browsers, the runtime token).
 * A client that initializes gets a session (one SDK server and transport reused for its requests, at most
 * {@link MAX_MCP_SESSIONS}, the oldest ended first); a request without a session is served statelessly, by a
 * server and transport of its own. Both go to the same core: a session holds no decision, only the SDK objects.
 */
export function registerMcpRoutes(app: FastifyInstance, deps: McpDeps): void {
  let sdk: Promise<ServerSdk> | undefined;
  const sessions = new Map<string, Session>();
  const end = (id: string) => {
    const s = sessions.get(id);
    if (s === undefined) return;
    sessions.delete(id);
    void s.transport.close();
    void s.server.close();
  };
  app.post(MCP_PATH, async (req, reply) => {
    const loaded = await (sdk ??= loadServerSdk());
    const sessionId = req.headers[SESSION_HEADER];
    if (typeof sessionId === "string") {
      const session = sessions.get(sessionId);
      if (session === undefined) return reply.code(404).send({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      reply.hijack();
      abortOnDrop(reply.raw, req.body, session.inFlight);
      await session.transport.handleRequest(req.raw, reply.raw, req.body);
      return;
    }
    reply.hijack();
    const inFlight: InFlight = new Map();
    const server = buildServer(loaded, deps, inFlight);
    if (isInitialize(req.body)) {
      const transport = new loaded.Transport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          while (sessions.size >= MAX_MCP_SESSIONS) end(sessions.keys().next().value!);
          sessions.set(id, { server, transport, inFlight });
        },
      });
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
      return;
    }
    const transport = new loaded.Transport({ sessionIdGenerator: undefined });
    // Closing the transport aborts its calls (the SDK aborts every request it is serving).
    reply.raw.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req.raw, reply.raw, req.body);
  });
  // A session's server-initiated stream is not offered (nothing is pushed outside a call's own answer).
  const notAllowed = { jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null };
  app.get(MCP_PATH, async (_req, reply) => reply.code(405).header("allow", "POST, DELETE").send(notAllowed));
  app.delete(MCP_PATH, async (req, reply) => {
    const id = req.headers[SESSION_HEADER];
    if (typeof id !== "string" || !sessions.has(id)) return reply.code(404).send({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
    end(id);
    return reply.code(200).send();
  });
  app.addHook("onClose", async () => {
    for (const id of [...sessions.keys()]) end(id);
  });
}
