// The sidecar as an MCP server at `/mcp` (streamable HTTP), on the v2 SDK's one `Server` for every revision it
// serves: the 2026-07-28 revision (a client that probes with `server/discover` and sends the per-request `_meta`
// envelope: served per request, no session) and the 2025-era revisions (2025-11-25 back to 2024-10-07, the
// `initialize` handshake: a client that initializes keeps one server and transport for its session, a request
// without one gets its own). Every answer comes from the same handlers (./mcp-handlers.ts) and so the same core:
// a session holds no decision, only the SDK objects. Every refusal of a call is the core's, so it is audited and
// counted like one on `/v1`, a `tools/call` whose params the SDK's schema refuses included (refused by the core
// here, then answered with the SDK's JSON-RPC error); what is answered here alone is the protocol's (a malformed
// JSON-RPC request, an unknown method, session or revision), and no call exists for those.
import { randomBytes, randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { McpHttpHandler, RequestStateCodec, Server, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { onResponseDropped } from "../http/response-dropped.ts";
import { buildServer, loadServerSdk, type McpDeps, type McpServerParts, type ServerSdk } from "./mcp-handlers.ts";
import { PendingCalls, REQUEST_STATE_TTL_SECONDS, type CallState, type McpEra } from "./pending-prompt.ts";
import { findMalformedToolCalls } from "./malformed-call.ts";

export type { McpDeps } from "./mcp-handlers.ts";

/** The path of the MCP endpoint. */
export const MCP_PATH = "/mcp";
/** Most MCP sessions held at once: a new one past it ends the oldest (only the runtime, holding the token, opens any). */
export const MAX_MCP_SESSIONS = 8;
/** The header naming a session (MCP's streamable HTTP transport, 2025 era). */
const SESSION_HEADER = "mcp-session-id";
/** Request headers not carried into the SDK's web `Request` (the body is handed over parsed). */
const HOP_HEADERS = new Set(["content-length", "transfer-encoding", "connection", "keep-alive"]);

/** One 2025-era session: its SDK server and transport, kept across the requests of one client. */
interface Session {
  readonly server: Server;
  readonly transport: WebStandardStreamableHTTPServerTransport;
}

/**
 * The request as the SDK's web-standard transports take it. Its signal aborts when the connection closes before
 * the answer was written: the sidecar keeps no event store, so such an answer can never be delivered (nor
 * resumed), and the calls it carried are withdrawn (./mcp-handlers.ts reads the signal).
 */
function toWebRequest(req: FastifyRequest, reply: FastifyReply): Request {
  const dropped = new AbortController();
  onResponseDropped(reply.raw, () => dropped.abort());
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || HOP_HEADERS.has(k)) continue;
    for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
  }
  return new Request(`http://${req.headers.host ?? "localhost"}${req.url}`, { method: req.method, headers, signal: dropped.signal });
}

/**
 * Writes the SDK's answer: the status and headers at once (an SSE stream's headers must reach the client before
 * its first event, which for a call waiting on a prompt can be minutes away), then the body as it comes. A client
 * that hangs up stops the copy.
 */
async function writeWebResponse(res: ServerResponse, answer: Response): Promise<void> {
  res.writeHead(answer.status, Object.fromEntries(answer.headers.entries()));
  res.flushHeaders();
  if (answer.body === null) {
    res.end();
    return;
  }
  const reader = answer.body.getReader();
  res.once("close", () => void reader.cancel().catch(() => undefined));
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) res.write(r.value);
  } catch {
    // The stream was cancelled because the client went away: nothing is left to write to.
  }
  res.end();
}

function isInitialize(body: unknown): boolean {
  return typeof body === "object" && body !== null && !Array.isArray(body) && (body as { method?: unknown }).method === "initialize";
}

/** What `/mcp` keeps between requests: the SDK once loaded, the 2026-era handler, the 2025-era sessions. */
class McpEndpoint {
  readonly #deps: McpDeps;
  #sdk: Promise<ServerSdk> | undefined;
  #modern: McpHttpHandler | undefined;
  readonly #sessions = new Map<string, Session>();
  readonly #unsubscribe: () => void;
  readonly #pending = new PendingCalls();
  /** The 2026-07-28 `requestState` codec, keyed per process: a retry reaching a restarted sidecar is refused. */
  #stateCodec: RequestStateCodec<CallState> | undefined;

  /**
   * A stage move (`next_stage` here, or the runtime's `POST /v1/stage`) changed the tool list: every open 2026-era
   * subscription hears it (2025-era sessions hold no stream but a call's own, where `next_stage` tells its caller).
   */
  constructor(deps: McpDeps) {
    this.#deps = deps;
    this.#unsubscribe = deps.service.onStageMoved(() => this.#modern?.notify.toolsChanged());
  }

  has(id: string): boolean {
    return this.#sessions.has(id);
  }

  /** Ends a 2025-era session: the calls last answered pending in it are withdrawn (nobody is left to collect them). */
  end(id: string): void {
    const s = this.#sessions.get(id);
    if (s === undefined) return;
    this.#sessions.delete(id);
    for (const call of this.#pending.callsOf(id)) this.#deps.service.withdraw(call, "cancelled");
    void s.transport.close();
    void s.server.close();
  }

  /** What a server of `era` is built from. */
  #parts(sdk: ServerSdk, era: McpEra): McpServerParts {
    this.#stateCodec ??= sdk.createRequestStateCodec<CallState>({ key: randomBytes(32), ttlSeconds: REQUEST_STATE_TTL_SECONDS });
    return { service: this.#deps.service, era, pending: this.#pending, stateCodec: this.#stateCodec };
  }

  async close(): Promise<void> {
    this.#unsubscribe();
    for (const id of [...this.#sessions.keys()]) this.end(id);
    await this.#modern?.close();
  }

  /** One POST: to its session, to the 2026-era handler, or to a new session or stateless exchange of the 2025 era. */
  async post(req: FastifyRequest, reply: FastifyReply): Promise<Response> {
    // The SDK answers these with a protocol error and never calls a handler: each is refused (recorded) here.
    for (const bad of findMalformedToolCalls(req.body)) {
      this.#deps.service.refuseMalformed({ id: `mcp-${randomUUID()}`, tool: bad.tool, message: `[error] invalid tool call: ${bad.detail}` });
    }
    const sdk = await (this.#sdk ??= loadServerSdk());
    const sessionId = req.headers[SESSION_HEADER];
    const web = toWebRequest(req, reply);
    const options = { parsedBody: req.body };
    if (typeof sessionId === "string") {
      const session = this.#sessions.get(sessionId);
      if (session === undefined) return Response.json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }, { status: 404 });
      return session.transport.handleRequest(web, options);
    }
    if (!(await sdk.isLegacyRequest(web, req.body))) return this.#modernHandler(sdk).fetch(web, options);
    const server = buildServer(sdk, this.#parts(sdk, "legacy"));
    if (isInitialize(req.body)) {
      const transport = new sdk.WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          while (this.#sessions.size >= MAX_MCP_SESSIONS) this.end(this.#sessions.keys().next().value!);
          this.#sessions.set(id, { server, transport });
        },
      });
      await server.connect(transport);
      return transport.handleRequest(web, options);
    }
    const transport = new sdk.WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // Closing the transport once the exchange is over (or dropped) aborts whatever it still serves.
    reply.raw.once("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    return transport.handleRequest(web, options);
  }

  /** The 2026-07-28 revision: one server per exchange, from the same handlers; 2025-era traffic never reaches it. */
  #modernHandler(sdk: ServerSdk): McpHttpHandler {
    // Open `subscriptions/listen` streams are capped like sessions: only the runtime, holding the token, opens any.
    // Every answer is an SSE stream, its headers sent at once and a keep-alive comment every 15 s: a call waiting
    // on a prompt would otherwise send nothing until it is answered, and a client's HTTP stack gives up on a
    // response with no headers (Node's fetch after 300 s) long before the interaction timeout a person has.
    const parts = this.#parts(sdk, "modern");
    this.#modern ??= sdk.createMcpHandler(() => buildServer(sdk, parts), { legacy: "reject", maxSubscriptions: MAX_MCP_SESSIONS, responseMode: "sse" });
    return this.#modern;
  }
}

/**
 * Registers `/mcp` on the app (behind the same request guard as `/v1`: Host, no browsers, the runtime token).
 * A 2025-era client that initializes gets a session (at most {@link MAX_MCP_SESSIONS}, the oldest ended first);
 * a 2025-era request without a session, and every 2026-era request, is served by a server of its own.
 */
export function registerMcpRoutes(app: FastifyInstance, deps: McpDeps): void {
  const endpoint = new McpEndpoint(deps);
  app.post(MCP_PATH, async (req, reply) => {
    const answer = await endpoint.post(req, reply);
    reply.hijack();
    await writeWebResponse(reply.raw, answer);
  });
  // A session's server-initiated stream is not offered (nothing is pushed outside a call's own answer).
  const notAllowed = { jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null };
  app.get(MCP_PATH, async (_req, reply) => reply.code(405).header("allow", "POST, DELETE").send(notAllowed));
  app.delete(MCP_PATH, async (req, reply) => {
    const id = req.headers[SESSION_HEADER];
    if (typeof id !== "string" || !endpoint.has(id)) return reply.code(404).send({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
    endpoint.end(id);
    return reply.code(200).send();
  });
  app.addHook("onClose", async () => endpoint.close());
}
