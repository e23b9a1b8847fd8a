// The sidecar as an MCP server (streamable HTTP at `/mcp`: a client that initializes keeps one SDK server and
// transport for its session, a request without one gets its own). `tools/list` is the
// current stage's catalogue; `tools/call` is one call to the same core as `/v1/tool-calls`: permission → read
// path → gate, the same audit and labels; an `ask` waits on the same approval channel until it is answered or
// the policy's timeout refuses it. The MCP client cannot answer prompts: nothing on `/mcp` does.
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { buildGaveUpMessage, buildUnavailableMessage, type CallOutcome } from "../core/call-outcomes.ts";
import { RESULT_TOOL } from "../core/run-result.ts";
import type { ToolCallService } from "../core/tool-call-service.ts";
import { buildCallResult, buildRefusalResult, buildTextResult } from "./call-result.ts";
import { isMcpCallable, listStageTools } from "./tool-catalog.ts";

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

/** Waits out an `ask` (the same prompt a `/v1` client would wait on) until the call is settled or the client leaves. */
async function settle(service: ToolCallService, id: string, first: CallOutcome, signal: AbortSignal, progress: () => Promise<void>): Promise<CallOutcome | undefined> {
  let out: CallOutcome | undefined = first;
  while (out?.kind === "ask") {
    if (signal.aborted) return undefined;
    await progress();
    out = await service.wait(id, ASK_WAIT_MS);
  }
  return out;
}

/** `[unavailable]`: a tool MCP cannot carry (one the runtime would execute itself), with `/v1`'s code. */
function unavailable(deps: McpDeps, name: string): CallToolResult {
  return buildRefusalResult(buildUnavailableMessage(name, deps.service.currentStage().stage.name), { code: "tool-unavailable", source: "tool_unavailable" });
}

async function callTool(deps: McpDeps, name: string, args: Record<string, unknown>, signal: AbortSignal, progress: () => Promise<void>): Promise<CallToolResult> {
  await deps.service.gateway?.ready();
  if (!isMcpCallable(name, deps.service.gateway)) return unavailable(deps, name);
  const id = `mcp-${randomUUID()}`;
  const out = await settle(deps.service, id, await deps.service.submit({ id, tool: name, args }), signal, progress);
  // The client left while its call waited on a prompt: nobody reads this answer.
  if (out === undefined) return buildRefusalResult(buildGaveUpMessage(name), { code: "client-gave-up", source: "client_gave_up" });
  if (out.kind === "ask") throw new Error("unreachable: a settled call is never pending");
  if (out.kind !== "run") return buildCallResult(out);
  // Only `submit_output` is answered `run` among the tools MCP offers: its output is stored, and the
  // confirmation is labelled like any result the runtime reports.
  if (name !== RESULT_TOOL) return unavailable(deps, name);
  const r = deps.service.reportResult(id, undefined);
  if (!r.ok) return buildRefusalResult(`[error] ${r.message}`, { code: "result-not-stored" });
  return buildTextResult(OUTPUT_SUBMITTED, false);
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

function buildServer(sdk: ServerSdk, deps: McpDeps): Server {
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
    return callTool(deps, req.params.name, req.params.arguments ?? {}, extra.signal, progress);
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
      await session.transport.handleRequest(req.raw, reply.raw, req.body);
      return;
    }
    reply.hijack();
    const server = buildServer(loaded, deps);
    if (isInitialize(req.body)) {
      const transport = new loaded.Transport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          while (sessions.size >= MAX_MCP_SESSIONS) end(sessions.keys().next().value!);
          sessions.set(id, { server, transport });
        },
      });
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
      return;
    }
    const transport = new loaded.Transport({ sessionIdGenerator: undefined });
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
