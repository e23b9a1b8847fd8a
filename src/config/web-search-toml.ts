// `[web_search]` of config.toml (ours, not upstream's) onto the LeviathPolicy's spec.webSearch: the MCP server and
// tool that run the built-in `web_search`, and how its arguments map onto the tool's. A key that is not one of these
// is refused naming it (with the nearest when one is close): a misspelt `query_argument` would send the query under
// the wrong name. The values are checked by the schema, which names `webSearch.<field>`.
import { findNearestName } from "../policy/nearest-name.ts";
import type { LoadIssue } from "./load-error.ts";
import { isTable, locateTomlLine, type TomlDoc } from "./toml-source.ts";

/** The keys of `[web_search]` and the field of spec.webSearch each sets. */
const WEB_SEARCH_KEYS: Readonly<Record<string, string>> = {
  server: "server",
  tool: "tool",
  query_argument: "queryArgument",
  count_argument: "countArgument",
  freshness_argument: "freshnessArgument",
  arguments: "arguments",
};

function issueAt(doc: TomlDoc, key: string | undefined, message: string): LoadIssue {
  const line = locateTomlLine(doc, ["web_search"], key);
  return { file: doc.file, where: key === undefined ? "[web_search]" : `[web_search] ${key}`, message, ...(line ? { line } : {}) };
}

/** Map `[web_search]` onto spec.webSearch; an unknown key is an issue naming it. */
export function mapWebSearch(doc: TomlDoc, table: unknown): { webSearch: Record<string, unknown>; issues: LoadIssue[] } {
  if (!isTable(table)) return { webSearch: {}, issues: [issueAt(doc, undefined, "[web_search] must be a table (server, tool, query_argument, ...)")] };
  const issues: LoadIssue[] = [];
  const webSearch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(table)) {
    const field = WEB_SEARCH_KEYS[k];
    if (field !== undefined) {
      webSearch[field] = v;
      continue;
    }
    const nearest = findNearestName(k, Object.keys(WEB_SEARCH_KEYS));
    issues.push(issueAt(doc, k, `[web_search] has unknown key '${k}'${nearest ? ` (did you mean '${nearest}'?)` : ""} (valid: ${Object.keys(WEB_SEARCH_KEYS).join(", ")})`));
  }
  return { webSearch, issues };
}
