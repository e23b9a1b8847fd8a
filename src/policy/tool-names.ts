// Tool names a permission map or a stage's availableTools may carry, and the nearest known name to one that is
// not: an entry under a misspelt name (`shel`, `read_fiel`) governs nothing, so the permission its author meant
// is lost without a word. Known: every built-in spelling (api/tools.ts), `*` (launch overrides), and any
// `<server>__<tool>` name (an MCP server's tools are only known once it is connected). Pure.
import { BUILTIN_TOOL_SPELLINGS } from "../api/tools.ts";

/** Edits at most between a name and the built-in it is taken for (`shel` is 1 from `shell`). */
const MAX_DISTANCE = 2;

/** Whether a tool name can name a tool: a built-in spelling, `*`, or an MCP tool (`<server>__<tool>`). */
export function isKnownToolName(name: string): boolean {
  return name === "*" || name.includes("__") || BUILTIN_TOOL_SPELLINGS.includes(name);
}

/** Levenshtein distance, stopping early once it exceeds `max`. */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    if (Math.min(...next) > max) return max + 1;
    row = next;
  }
  return row[b.length]!;
}

/** The built-in spelling nearest to `name` (case ignored, at most {@link MAX_DISTANCE} edits), if one is. */
export function findNearestToolName(name: string): string | undefined {
  const lower = name.toLowerCase();
  let best: { spelling: string; d: number } | undefined;
  for (const spelling of BUILTIN_TOOL_SPELLINGS) {
    const d = distance(lower, spelling, MAX_DISTANCE);
    if (d <= MAX_DISTANCE && (best === undefined || d < best.d)) best = { spelling, d };
  }
  return best?.spelling;
}
