// What the model is told about the sidecar's built-in tools when the tools come from the stage's names rather
// than from MCP's tools/list: the same specs MCP lists (api/tools.ts), upstream's argument names as JSON Schema.
// Only tools the sidecar executes have one: a name the stage lists that nothing executes (the context tools, a tool
// of no server) is not offered to the model at all. web_search is executed only where the policy names a backend,
// which a stage's names do not tell: it is offered from the sidecar's tools/list (/mcp), never from here.
import { describeBuiltinTool, findBuiltinTool, listToolsOf } from "../../api/tools.ts";
import type { ToolSpec } from "./providers/types.ts";

/** Tools a stage offers when it lists none (upstream's file tools and shell). */
export const DEFAULT_STAGE_TOOLS: readonly string[] = [...listToolsOf("file"), ...listToolsOf("shell")];

/**
 * The spec of a built-in the sidecar executes (file tools, shell, the HTTP tools, submit_output); undefined for
 * web_search (its backend is the policy's) and any other name: the reference runtime executes no tool of its own,
 * so a tool nothing executes is never offered.
 */
export function describeTool(name: string): ToolSpec | undefined {
  const spec = findBuiltinTool(name)?.executor === "search" ? undefined : describeBuiltinTool(name);
  return spec === undefined ? undefined : { name: spec.name, description: spec.description, inputSchema: spec.inputSchema };
}
