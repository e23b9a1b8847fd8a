// What `tools/list` offers over MCP: the built-ins the sidecar itself executes (file tools, shell, the HTTP tools,
// `submit_output`, web_search where the policy names its backend) that the current stage offers, each with its JSON
// Schema and honest annotations. Tools a `/v1` runtime would execute itself (context, todo tools) are not offered:
// an MCP client has no way to run a tool it called and report the result.
import type { Tool } from "@modelcontextprotocol/server";
import { describeBuiltinTool, listBuiltinToolSpecs, type BuiltinToolSpec } from "../../api/tools.ts";
import { TOOL_ALIASES } from "../../policy/permissions.ts";
import { isToolOffered } from "../core/call-inputs.ts";
import type { Enforcement } from "../core/enforcement.ts";
import type { RunStage } from "../executors/shell.ts";
import type { GatewayTool, ToolGateway } from "../core/tool-gateway.ts";

/**
 * A gateway tool as listed: upstream's name (prefixed), description and input schema. Its annotations are the
 * sidecar's, not the server's: a server's `readOnlyHint` is its own claim, and the gate treats the tool as
 * outbound unless the admin classified it.
 */
function toListedGatewayTool(t: GatewayTool): Tool {
  return {
    name: t.name, inputSchema: t.tool.inputSchema as Tool["inputSchema"], // JSON from the v1 client: the same wire shape
    ...(t.tool.description === undefined ? {} : { description: t.tool.description }),
    annotations: { ...(t.tool.annotations?.title === undefined ? {} : { title: t.tool.annotations.title }), openWorldHint: true },
  };
}

/** A built-in as MCP lists it (copied: the SDK's `Tool` is mutable). */
function toListedTool(spec: BuiltinToolSpec): Tool {
  return { name: spec.name, description: spec.description, inputSchema: spec.inputSchema, annotations: { ...spec.annotations } };
}

/** The tools `tools/list` answers with in this stage. */
export function listStageTools(enf: Enforcement, stage: RunStage, gateway?: ToolGateway): Tool[] {
  const tools: Tool[] = [];
  for (const spec of listBuiltinToolSpecs()) if (isToolOffered(stage, enf, spec.name, gateway)) tools.push(toListedTool(spec));
  // An alias (`bash`) only where the stage spells it out: listing both would offer one tool twice.
  for (const alias of TOOL_ALIASES.keys()) {
    const spec = describeBuiltinTool(alias);
    if (spec !== undefined && stage.availableTools?.includes(alias) === true) tools.push(toListedTool(spec));
  }
  for (const t of gateway?.tools() ?? []) if (isToolOffered(stage, enf, t.name, gateway)) tools.push(toListedGatewayTool(t));
  return tools;
}
