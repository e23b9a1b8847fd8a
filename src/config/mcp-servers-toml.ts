// Upstream's `[[mcp_servers]]` onto the LeviathPolicy's spec.mcpServers. Every key of upstream's config.schema.json
// is accepted: `transport` ("stdio" or "http"; inferred from command or url when omitted, as upstream) says which
// of command and url the entry is, which our schema says by the one it carries, so it is checked against the
// entry and not carried. A key upstream does not define is refused naming the entry and the key, with the
// nearest key when one is close: a misspelt `headers` would connect the server without its credentials.
import { findNearestName } from "../policy/nearest-name.ts";
import type { LoadIssue } from "./load-error.ts";
import { isTable, locateArrayEntryLine, type TomlDoc } from "./toml-source.ts";

/** The keys of one `[[mcp_servers]]` entry, as upstream defines them; all but `transport` keep their name in the LeviathPolicy. */
export const MCP_SERVER_KEYS: readonly string[] = ["name", "transport", "url", "headers", "command", "args", "env"];

/** Upstream's transports and the key each needs (the other one contradicts it). */
const TRANSPORT_NEEDS: Readonly<Record<string, "command" | "url">> = { stdio: "command", http: "url" };

/** How messages name the `index`-th (0-based) entry of `[[mcp_servers]]`: `mcp_servers[1]`. */
export const describeMcpEntry = (index: number): string => `mcp_servers[${index}]`;

/** `MCP server 'remote'`, or `the MCP server` when the entry has no usable name. */
const serverOf = (entry: Record<string, unknown>): string => (typeof entry["name"] === "string" ? `MCP server '${entry["name"]}'` : "the MCP server");

function issueAt(doc: TomlDoc, index: number, path: readonly string[], message: string): LoadIssue {
  const line = locateArrayEntryLine(doc, "mcp_servers", index, path);
  return { file: doc.file, where: [describeMcpEntry(index), ...path].join("."), message, ...(line ? { line } : {}) };
}

/** Why the entry's `transport` cannot stand, or undefined when it can (or is omitted). */
function checkTransport(entry: Record<string, unknown>): string | undefined {
  const transport = entry["transport"];
  if (transport === undefined) return undefined;
  const needs = typeof transport === "string" ? TRANSPORT_NEEDS[transport] : undefined;
  if (needs === undefined) return `${serverOf(entry)}: transport ${JSON.stringify(transport)} is not "stdio" or "http"`;
  const other = needs === "command" ? "url" : "command";
  const says = `${serverOf(entry)} says transport = "${String(transport)}"`;
  if (!(other in entry)) return needs in entry ? undefined : `${says} but has no ${needs}`;
  const why = "a stdio server is started by its command, an http server is reached at its url";
  if (needs in entry) return `${says} but has a ${other} too: ${why}; remove the ${other}`;
  return `${says} but has a ${other} and no ${needs}: ${why}; set transport = "${needs === "command" ? "http" : "stdio"}" or replace the ${other} by a ${needs}`;
}

/** One entry: its keys checked, its transport checked against it and left out. */
function mapEntry(doc: TomlDoc, entry: Record<string, unknown>, index: number, issues: LoadIssue[]): Record<string, unknown> {
  for (const key of Object.keys(entry)) {
    if (MCP_SERVER_KEYS.includes(key)) continue;
    const nearest = findNearestName(key, MCP_SERVER_KEYS);
    issues.push(issueAt(doc, index, [key], `unknown key of ${serverOf(entry)}${nearest ? ` (did you mean '${nearest}'?)` : ""}; valid: ${MCP_SERVER_KEYS.join(", ")}`));
  }
  const transport = checkTransport(entry);
  if (transport !== undefined) issues.push(issueAt(doc, index, ["transport"], transport));
  const out = { ...entry };
  delete out["transport"];
  return out;
}

/** Map `mcp_servers` of config.toml onto spec.mcpServers; what cannot be mapped is an issue naming the entry. */
export function mapMcpServers(doc: TomlDoc, servers: unknown): { servers: unknown[]; issues: LoadIssue[] } {
  const issues: LoadIssue[] = [];
  if (!Array.isArray(servers)) {
    return { servers: [], issues: [{ file: doc.file, where: "mcp_servers", message: "mcp_servers must be an array of tables ([[mcp_servers]])" }] };
  }
  const mapped = servers.map((entry: unknown, i) => {
    if (isTable(entry)) return mapEntry(doc, entry, i, issues);
    issues.push(issueAt(doc, i, [], "must be a table"));
    return entry;
  });
  return { servers: mapped, issues };
}
