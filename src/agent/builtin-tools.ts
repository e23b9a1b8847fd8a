// What the model is told about the sidecar's built-in tools when the tools come from the stage's names rather
// than from MCP's tools/list: the same specs MCP lists (api/tools.ts), upstream's argument names as JSON Schema.
import { describeBuiltinTool, listToolsOf } from "../api/tools.ts";
import type { ToolSpec } from "./providers/types.ts";

/** Tools a stage offers when it lists none (upstream's file tools and shell). */
export const DEFAULT_STAGE_TOOLS: readonly string[] = [...listToolsOf("file"), ...listToolsOf("shell")];

/** The spec of a named tool: the built-in's, or an open object schema for a tool the runtime has no schema for. */
export function describeTool(name: string): ToolSpec {
  const spec = describeBuiltinTool(name);
  if (spec === undefined) return { name, description: `The tool '${name}'.`, inputSchema: { type: "object", additionalProperties: true } };
  return { name: spec.name, description: spec.description, inputSchema: spec.inputSchema };
}
