// The executor of the built-in `web_search` (executor kind `search` in api/tools.ts), run by the sidecar once the
// call was allowed: the call's arguments (upstream's query, count, freshness) are mapped onto the tool the policy's
// `webSearch` names, with its fixed arguments, and sent to that MCP server through the gateway's connection, under
// the policy's HTTP deadline. What the server returns is the result, labelled public (web content is untrusted);
// a server that is down, a tool error and a timeout come back as an error result naming the backend, never as
// anything else run in its place.
import type { WebSearchSpec } from "../../api/leviath-policy.ts";
import type { GatewayResult, ToolGateway } from "../core/tool-gateway.ts";

/** Whether the policy names a search backend and its server is connected and lists the tool. */
export function isSearchBacked(webSearch: WebSearchSpec | undefined, gateway: ToolGateway | undefined): boolean {
  return webSearch !== undefined && gateway?.lists(webSearch.server, webSearch.tool) === true;
}

/** The backend tool's arguments for a call: the fixed ones, then the mapped query, count and freshness. */
export function buildSearchArguments(w: WebSearchSpec, args: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...w.arguments, [w.queryArgument]: args["query"] };
  if (w.countArgument !== undefined && args["count"] !== undefined) out[w.countArgument] = args["count"];
  if (w.freshnessArgument !== undefined && args["freshness"] !== undefined) out[w.freshnessArgument] = args["freshness"];
  return out;
}

/** Runs one allowed search on the backend; a failure is an error result that names the backend. */
export async function runWebSearch(gateway: ToolGateway, w: WebSearchSpec, args: Readonly<Record<string, unknown>>, timeoutSeconds: number): Promise<GatewayResult> {
  const r = await gateway.callUpstream(w.server, w.tool, buildSearchArguments(w, args), timeoutSeconds * 1000);
  if (!r.isError) return r;
  const text = r.text.startsWith("[error] ") ? r.text.slice("[error] ".length) : r.text;
  return { text: `[error] web_search: the search backend (tool '${w.tool}' of MCP server '${w.server}') failed: ${text}`, isError: true };
}
