import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema, WebSearchSchema } from "./leviath-policy.ts";
import { RunPolicySchema } from "./run-policy.ts";

const server = { name: "search", url: "https://search.internal/mcp" };

/** The issues of a spec, as `path: message`. */
function issuesOf(spec: unknown): string[] {
  const r = LeviathPolicySpecSchema.safeParse(spec);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
}

describe("spec.webSearch", () => {
  it("names a tool of one of the policy's MCP servers; the query goes to `query` unless mapped", () => {
    const spec = LeviathPolicySpecSchema.parse({ mcpServers: [server], webSearch: { server: "search", tool: "brave_web_search" } });
    expect(spec.webSearch).toEqual({ server: "search", tool: "brave_web_search", queryArgument: "query", arguments: {} });
    expect(LeviathPolicySpecSchema.parse({}).webSearch).toBeUndefined();
  });

  it("refuses a server the policy does not declare, naming webSearch.server and the servers it has", () => {
    expect(issuesOf({ mcpServers: [server], webSearch: { server: "brave", tool: "search" } }))
      .toEqual(["webSearch.server: 'brave' is not an MCP server of this policy (declared: search); web_search calls a tool of one of mcpServers"]);
    expect(issuesOf({ webSearch: { server: "brave", tool: "search" } }))
      .toEqual(["webSearch.server: 'brave' is not an MCP server of this policy (it declares none); web_search calls a tool of one of mcpServers"]);
  });

  it("refuses a missing tool, an unknown field, two mappings onto one argument and a fixed argument that replaces a mapped one", () => {
    expect(issuesOf({ mcpServers: [server], webSearch: { server: "search" } })).toEqual(["webSearch.tool: Invalid input: expected string, received undefined"]);
    expect(issuesOf({ mcpServers: [server], webSearch: { server: "search", tool: "t", queryArg: "q" } })).toEqual(['webSearch: Unrecognized key: "queryArg"']);
    expect(issuesOf({ mcpServers: [server], webSearch: { server: "search", tool: "t", queryArgument: "q", countArgument: "q" } }))
      .toEqual(["webSearch.queryArgument: queryArgument, countArgument and freshnessArgument name three different arguments"]);
    expect(issuesOf({ mcpServers: [server], webSearch: { server: "search", tool: "t", arguments: { query: "x", lang: "en" } } }))
      .toEqual(["webSearch.arguments.query: 'query' is a mapped argument of web_search; a fixed argument cannot replace it"]);
    expect(issuesOf({ mcpServers: [server], webSearch: { server: "search", tool: "t", arguments: { filter: { site: "x" } } } })[0]).toMatch(/^webSearch\.arguments\.filter: /);
  });

  it("is checked the same way in a run policy", () => {
    expect(WebSearchSchema.parse({ server: "s", tool: "t", countArgument: "n", freshnessArgument: "age" })).toMatchObject({ queryArgument: "query", countArgument: "n", freshnessArgument: "age" });
    const run = RunPolicySchema.safeParse({
      agent: { key: "ns/a", name: "a" }, stages: [{ name: "main", sandbox: { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" } }], entryStage: "main",
      launch: { mode: "interactive" }, toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
      readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false }, taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
      limits: { interactionTimeoutSeconds: 0, shellTimeoutSeconds: 60 }, webSearch: { server: "gone", tool: "t" },
    });
    expect(run.success ? [] : run.error.issues.map((i) => i.path.join("."))).toEqual(["webSearch.server"]);
  });
});
