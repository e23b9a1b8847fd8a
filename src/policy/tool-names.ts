// Tool names a permission map or a stage's availableTools may carry, and the nearest known name to one that is
// not: an entry under a misspelt name (`shel`, `read_fiel`) governs nothing, so the permission its author meant
// is lost without a word. Known: every built-in spelling (api/tools.ts), `*` (launch overrides), and any
// `<server>__<tool>` name (an MCP server's tools are only known once it is connected). Pure.
import { BUILTIN_TOOL_SPELLINGS } from "../api/tools.ts";
import { findNearestName } from "./nearest-name.ts";

/** Whether a tool name can name a tool: a built-in spelling, `*`, or an MCP tool (`<server>__<tool>`). */
export function isKnownToolName(name: string): boolean {
  return name === "*" || name.includes("__") || BUILTIN_TOOL_SPELLINGS.includes(name);
}

/** The built-in spelling nearest to `name` (case ignored, at most two edits), if one is. */
export function findNearestToolName(name: string): string | undefined {
  return findNearestName(name, BUILTIN_TOOL_SPELLINGS);
}
