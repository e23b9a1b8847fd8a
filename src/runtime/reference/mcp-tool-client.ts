// The tool client over the sidecar's MCP endpoint (/mcp, streamable HTTP, the SDK's client): the stage's tools and
// their schemas from tools/list, each call with tools/call. A pending prompt keeps the call open (the sidecar sends
// progress while it waits). The sidecar's label rides in the result's `_meta`, with the entry it labelled; a
// refusal's code and decision source ride there too (src/api/mcp-meta.ts), the message being the content.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LABEL_META_KEY, REFUSAL_META_KEY, RefusalMetaSchema } from "../../api/mcp-meta.ts";
import type { RefusalCode } from "../../api/sidecar-contract.ts";
import { NEXT_STAGE_TOOL, RESULT_TOOL } from "../../api/tools.ts";
import type { ToolSpec } from "./providers/types.ts";
import { createCappedFetch } from "../../io/capped-fetch.ts";
import { isRefusedConnection } from "../sidecar-client.ts";
import type { RuntimeToken } from "./runtime-token.ts";
import type { ToolOutcome } from "./tool-client.ts";

/** A call may wait this long without progress; progress (a prompt still pending) renews it. */
const CALL_TIMEOUT_MS = 60_000;

/** An MCP connection to the sidecar. */
export interface McpTools {
  list(): Promise<ToolSpec[]>;
  call(name: string, args: Record<string, unknown>): Promise<ToolOutcome>;
  close(): Promise<void>;
}

type Meta = { label?: string; taint?: string; entry?: { region: string; id: string } };

/**
 * Whether the sidecar refused a request because it no longer knows the connection: a 401 (a restarted sidecar wrote a
 * new runtime token) or a 404 (its MCP sessions went with it). Either is a refusal before anything ran.
 */
function isRestartRefusal(err: unknown): boolean {
  return err instanceof StreamableHTTPError && (err.code === 401 || err.code === 404);
}

/**
 * Connects to `<baseUrl>/mcp` with the runtime token. When the sidecar refuses the connection as one it does not know
 * (it restarted), or refuses the TCP connection itself (it is starting again: `waitHealthy` waits for it), the token
 * is read again and the request goes once more over a new connection. Nothing reached the sidecar in either case.
 */
export async function connectMcpTools(baseUrl: string, token: RuntimeToken, opts: { waitHealthy?: () => Promise<void>; traceMeta?: Readonly<Record<string, string>> | undefined } = {}): Promise<McpTools> {
  const url = new URL(`${baseUrl.replace(/\/+$/, "")}/mcp`);
  const open = async (): Promise<{ client: Client; token: string }> => {
    const sent = token.current();
    const c = new Client({ name: "leviath-agent", version: "0.1.0" });
    const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${sent}` } }, fetch: createCappedFetch({ peer: url.host }) });
    await c.connect(transport);
    return { client: c, token: sent };
  };
  let conn = await open();
  const withReconnect = async <T>(op: (c: Client) => Promise<T>): Promise<T> => {
    const used = conn;
    try {
      return await op(used.client);
    } catch (err) {
      const refused = isRefusedConnection(err);
      if (!isRestartRefusal(err) && !(refused && opts.waitHealthy)) throw err;
      // Another call may have reconnected meanwhile; else this one does, with the token as the file holds it now.
      if (conn === used) {
        if (refused) await opts.waitHealthy?.();
        token.renew(used.token);
        conn = await open();
        void used.client.close().catch(() => undefined);
      }
      return op(conn.client);
    }
  };
  return {
    async list() {
      const { tools } = await withReconnect((c) => c.listTools());
      // The sidecar's `next_stage` is for clients without a stage loop: this runtime offers its own and enters
      // the stage it picks with POST /v1/stage (the same core path).
      return tools.filter((t) => t.name !== NEXT_STAGE_TOOL).map((t) => ({ name: t.name, description: t.description ?? "", inputSchema: t.inputSchema as Record<string, unknown> }));
    },
    async call(name, args) {
      let r;
      try {
        r = await withReconnect((c) => c.callTool({ name, arguments: args, ...(opts.traceMeta === undefined ? {} : { _meta: { ...opts.traceMeta } }) }, undefined, { timeout: CALL_TIMEOUT_MS, resetTimeoutOnProgress: true, onprogress: () => undefined }));
      } catch (err) {
        return { decision: "deny", content: `[denied] Tool '${name}' was not run: the sidecar's MCP endpoint did not answer (${(err as Error).message}).`, isError: true, code: "sidecar-unavailable" satisfies RefusalCode, failedClosed: true };
      }
      const content = (Array.isArray(r.content) ? r.content : []).map((c: { type: string; text?: string }) => (c.type === "text" ? c.text ?? "" : "")).join("");
      const metas = r._meta as Record<string, unknown> | undefined;
      const meta = metas?.[LABEL_META_KEY] as Meta | undefined;
      const isError = r.isError === true;
      if (meta !== undefined) return { decision: "allow", content, isError, ...(meta.label ? { label: meta.label } : {}), ...(meta.taint ? { taint: meta.taint } : {}), ...(meta.entry ? { entry: meta.entry } : {}) };
      if (!isError && name === RESULT_TOOL) return { decision: "run", content, isError: false };
      const refusal = RefusalMetaSchema.safeParse(metas?.[REFUSAL_META_KEY]);
      // Neither labelled nor a refusal the sidecar signed: nothing says it ran, so it is taken as refused.
      if (!refusal.success) return { decision: "deny", content, isError: true, code: "sidecar-invalid-response" satisfies RefusalCode, failedClosed: true };
      return { decision: "deny", content, isError: true, code: refusal.data.code, ...(refusal.data.source ? { source: refusal.data.source } : {}) };
    },
    close: () => conn.client.close(),
  };
}
