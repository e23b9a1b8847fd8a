// `[mcp_overrides]` of policy.toml (taint-gate spec §2.3, newer form): the keys are dispatched tool
// names, so a nested `[mcp_overrides.<server>.tools.<tool>]` entry is keyed by the same sanitised
// `server__tool` name the executor advertises, and a flat `[mcp_overrides.<name>]` entry is used verbatim.
import { parseClassificationOverride } from "./classification.ts";
import type { ClassificationOverride, PolicyWarning, RawOverrideFields } from "./classification.ts";

/** Longest tool name providers accept. */
export const MAX_TOOL_NAME_LENGTH = 64;

/** One `[mcp_overrides.<key>]` table as read from a file: flat fields, a nested `tools` table, or both. */
export interface RawMcpOverrideEntry extends RawOverrideFields {
  readonly tools?: Readonly<Record<string, RawOverrideFields>>;
}

/** Every character outside `[A-Za-z0-9_-]` becomes `_`, cut to 64 bytes; an empty result is `tool`. */
export function sanitizeToolName(name: string): string {
  let out = "";
  // Iterating code points (not UTF-16 units) so one astral character becomes one `_`, as upstream.
  for (const ch of name) out += /^[A-Za-z0-9_-]$/.test(ch) ? ch : "_";
  // Every kept character is ASCII, so 64 characters are 64 bytes.
  out = out.slice(0, MAX_TOOL_NAME_LENGTH);
  return out === "" ? "tool" : out;
}

/** The name an MCP server's tool is dispatched (and classified) under: joined first, then sanitised. */
export function buildMcpToolName(server: string, tool: string): string {
  return sanitizeToolName(`${server}__${tool}`);
}

/** The override table and what was worth warning about while building it. */
export interface OverrideTableResult {
  readonly table: ReadonlyMap<string, ClassificationOverride>;
  readonly warnings: readonly PolicyWarning[];
}

function hasClassificationField(entry: RawOverrideFields): boolean {
  return entry.sensitivity !== undefined || entry.direction !== undefined || entry.clearance !== undefined;
}

/** Builds the override table from the raw `[mcp_overrides]` tables (nested and flat forms). */
export function buildOverrideTable(raw: Readonly<Record<string, RawMcpOverrideEntry>>): OverrideTableResult {
  const table = new Map<string, ClassificationOverride>();
  const warnings: PolicyWarning[] = [];
  const add = (key: string, fields: RawOverrideFields): void => {
    const parsed = parseClassificationOverride(key, fields);
    table.set(key, parsed.override);
    warnings.push(...parsed.warnings);
  };
  for (const [key, entry] of Object.entries(raw)) {
    if (entry.tools !== undefined) {
      for (const [tool, fields] of Object.entries(entry.tools)) add(buildMcpToolName(key, tool), fields);
    }
    // An entry with neither a tools table nor a field is dropped, as upstream.
    if (hasClassificationField(entry)) add(key, entry);
  }
  return { table, warnings };
}
