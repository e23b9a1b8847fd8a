// The runtime's tools: what the sidecar's MCP endpoint lists for the stage goes over MCP (schemas from tools/list);
// a tool the stage names that MCP does not serve (one the runtime would execute itself) goes over /v1, where the
// sidecar still decides it: permission, read paths and the taint gate apply to both.
import type { SidecarClient } from "../sidecar-client.ts";
import type { McpTools } from "./mcp-tool-client.ts";
import type { ToolClient } from "./tool-client.ts";
import { createV1ToolClient, listV1Tools } from "./v1-tool-client.ts";

/** A client that prefers MCP and falls back to /v1 per tool. */
export function createSidecarToolClient(sidecar: SidecarClient, mcp: McpTools): ToolClient {
  const v1 = createV1ToolClient(sidecar);
  let overMcp = new Set<string>();
  return {
    async listTools(stage) {
      const listed = await mcp.list();
      overMcp = new Set(listed.map((t) => t.name));
      const rest = listV1Tools(stage).filter((t) => !overMcp.has(t.name) && (stage.toolNames?.includes(t.name) ?? false));
      return [...listed, ...rest];
    },
    callTool: (id, name, args) => (overMcp.has(name) ? mcp.call(name, args) : v1.callTool(id, name, args)),
    close: () => mcp.close(),
  };
}
