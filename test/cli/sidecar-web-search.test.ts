import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerAndWait, callTool, makeTempDir, metricValue, parseJsonLines, scrapeMetrics, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";
import { freePorts } from "../integration/harness/loopback.ts";
import { repo } from "./run-cli.ts";

// web_search through a backend the admin names in config.toml's [web_search]: a real MCP server from the npm
// registry (server-filesystem over stdio, started confined by the sidecar), whose `search_files` takes the query
// as its `pattern` and a fixed `path`. Calls go over real HTTP to a real standalone sidecar: an allowed search
// reaches the server and returns its result labelled public; a denied or unanswered one never reaches it; under a
// private context the taint gate stops it; a backend the server does not list, or a server the policy does not
// declare, is refused naming the field.
const FILESYSTEM = repo("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const run = "searcher";

interface Tree {
  readonly root: string;
  readonly args: string[];
  readonly env: Record<string, string>;
  readonly audit: string;
}

/** A run's files; `webSearch` gives the lines of [web_search] (the tree's root given). */
function tree(prefix: string, webSearch: (root: string) => string[]): Tree {
  const root = makeTempDir(prefix);
  mkdirSync(join(root, "home", "vault"), { recursive: true });
  mkdirSync(join(root, "work", "docs"), { recursive: true });
  writeFileSync(join(root, "home", "vault", "secret.txt"), "vault secret\n");
  writeFileSync(join(root, "work", "docs", "notes.md"), "notes\n");
  // The blueprint names web_search (ask, the default): that is what offers it in a stage without a tool list.
  writeFileSync(join(root, "agent.leviath"), `[agent]\nname = '${run}'\n[read_paths]\nallow = ['~/vault']\n[security]\ntaint_tracking = true\n[tool_permissions]\nweb_search = 'ask'\n`);
  writeFileSync(join(root, "config.toml"), [
    `[agent_read_paths.${run}]`, "allow = ['~/vault']",
    "[[mcp_servers]]", "name = 'files'", `command = '${process.execPath}'`, `args = ['${FILESYSTEM}', '${join(root, "work")}']`,
    "[web_search]", ...webSearch(root), "",
  ].join("\n"));
  const args = ["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--metrics-listen", "127.0.0.1:0"];
  return { root, args, env: { LEVIATH_HOME: join(root, "home") }, audit: join(root, "audit", run, "stages", "0") };
}

async function listMcpTools(sc: SidecarProcess): Promise<Tool[]> {
  const client = new Client({ name: "leviath-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${sc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${sc.runtimeToken}` } } }));
  const { tools } = await client.listTools();
  await client.close();
  return tools;
}

/** A sidecar over the tree does not list web_search, refuses a call of it, and logs `line`. */
async function expectNotOffered(t: Tree, line: string): Promise<void> {
  const sc = await startSidecar(t.args, { env: t.env });
  try {
    expect((await listMcpTools(sc)).map((x) => x.name)).not.toContain("web_search");
    expect((await callTool(sc, "web_search", { query: "x" }, "n1")).body).toMatchObject({ decision: "deny", code: "tool-unavailable" });
    expect(sc.stderr() + sc.stdout()).toContain(line);
  } finally {
    expect(await sc.stop()).toBe(0);
  }
}

const searches = async (sc: SidecarProcess, outcome: string): Promise<number> => metricValue(await scrapeMetrics(sc), "leviath_sidecar_mcp_gateway_calls_total", { server: "files", outcome }) ?? 0;

describe("web_search through the admin's MCP server", () => {
  let t: Tree;
  let sc: SidecarProcess;
  beforeAll(async () => {
    // The fixed argument is the directory searched: the run's workdir.
    t = tree("leviath-websearch-", (root) => ["server = 'files'", "tool = 'search_files'", "query_argument = 'pattern'", `arguments = { path = '${join(root, "work")}' }`]);
    sc = await startSidecar(t.args, { env: t.env });
  }, 120_000);
  afterAll(async () => {
    expect(await sc.stop()).toBe(0);
  });

  it("is offered over MCP with upstream's arguments once the backend is listed", async () => {
    const tool = (await listMcpTools(sc)).find((x) => x.name === "web_search");
    expect(tool?.inputSchema).toMatchObject({ properties: { query: { type: "string" }, count: { type: "integer", default: 5 }, freshness: { type: "string" } }, required: ["query"] });
  });

  it("asks by default; a denied search never reaches the server", async () => {
    const ask = await callTool(sc, "web_search", { query: "**/*.md" }, "s1");
    expect(ask.status).toBe(202);
    expect(ask.body.approval).toMatchObject({ kind: "tool_approval" });
    const denied = await answerAndWait(sc, ask.body.approval!.id, "s1", "deny");
    expect(denied.body).toMatchObject({ decision: "deny", code: "approval-declined" });
    expect(await searches(sc, "ok") + await searches(sc, "error")).toBe(0);
  });

  it("forwards an allowed search to the server's tool with the mapped and fixed arguments, and labels the result public", async () => {
    const ask = await callTool(sc, "web_search", { query: "**/*.md", count: 3 }, "s2");
    const allowed = await answerAndWait(sc, ask.body.approval!.id, "s2", "allowForRun");
    expect(allowed.body).toMatchObject({ decision: "allow", isError: false, label: "public", taint: "public" });
    expect(allowed.body.result).toBe(join(t.root, "work", "docs", "notes.md"));
    expect(await searches(sc, "ok")).toBe(1);
    const line = parseJsonLines(readFileSync(join(t.audit, "decisions.jsonl"), "utf8")).find((d) => d["call_id"] === "s2" && d["decision"] === "allow");
    expect(line).toMatchObject({ tool_name: "web_search" });
  });

  it("refuses invalid arguments before any decision", async () => {
    expect((await callTool(sc, "web_search", { query: "" }, "s3")).body).toMatchObject({ decision: "deny", code: "invalid-arguments" });
  });

  it("is stopped by the taint gate once the context is private, and never reaches the server", async () => {
    expect((await callTool(sc, "read_file", { path: "~/vault/secret.txt" }, "r1")).body).toMatchObject({ taint: "private" });
    const ask = await callTool(sc, "web_search", { query: "vault secret" }, "s4");
    expect(ask.status).toBe(202);
    expect(ask.body.approval).toMatchObject({ kind: "taint_gate", prompt: "Tool 'web_search' would send Private-level data over a channel cleared only for Public. Allow it?" });
    const denied = await answerAndWait(sc, ask.body.approval!.id, "s4", "deny");
    expect(denied.body).toMatchObject({ decision: "deny", message: "[blocked] Tool 'web_search' would send data at private sensitivity, above its public clearance. Denied by user." });
    expect(await searches(sc, "ok")).toBe(1);
  });
});

describe("web_search misconfigured", () => {
  it("is offered nowhere, and refused, when the server lists no such tool; the log names webSearch.tool", async () => {
    const t = tree("leviath-websearch-tool-", () => ["server = 'files'", "tool = 'no_such_search'"]);
    await expectNotOffered(t, "web_search is not offered: webSearch.tool: MCP server 'files' lists no tool 'no_such_search'");
  }, 120_000);

  it("is offered nowhere, and refused, while its server cannot be reached; the log says so", async () => {
    const t = tree("leviath-websearch-down-", () => ["server = 'remote'", "tool = 'search'"]);
    // A second server, over HTTP, where nothing listens (a port just freed).
    const [port] = await freePorts(1);
    writeFileSync(join(t.root, "config.toml"), readFileSync(join(t.root, "config.toml"), "utf8").replace("[web_search]", `[[mcp_servers]]\nname = 'remote'\nurl = 'http://127.0.0.1:${port}/mcp'\n[web_search]`));
    await expectNotOffered(t, "web_search is not offered: webSearch.server: MCP server 'remote' is not connected");
  }, 120_000);

  it("gives the backend's tool error back as an error naming the backend, never another result", async () => {
    // The fixed directory is outside the server's allowed one: the server refuses the search.
    const t = tree("leviath-websearch-err-", () => ["server = 'files'", "tool = 'search_files'", "query_argument = 'pattern'", "arguments = { path = '/' }"]);
    const sc = await startSidecar(t.args, { env: t.env });
    try {
      const ask = await callTool(sc, "web_search", { query: "*" }, "e1");
      const done = await answerAndWait(sc, ask.body.approval!.id, "e1", "allowOnce");
      expect(done.body).toMatchObject({ decision: "allow", isError: true });
      expect(done.body.result).toMatch(/^\[error\] web_search: the search backend \(tool 'search_files' of MCP server 'files'\) failed: .*Access denied/);
      expect(await searches(sc, "error")).toBe(1);
    } finally {
      expect(await sc.stop()).toBe(0);
    }
  }, 120_000);

  it("refuses to start when [web_search] names a server the policy does not declare, naming the field", async () => {
    const t = tree("leviath-websearch-server-", () => ["server = 'search'", "tool = 'search_files'"]);
    await expect(startSidecar(t.args, { env: t.env })).rejects.toThrow(/webSearch\.server.*'search' is not an MCP server of this policy \(declared: files\)/);
  }, 120_000);

  it("refuses a misspelt key of [web_search], naming it and the key meant", async () => {
    const t = tree("leviath-websearch-key-", () => ["server = 'files'", "tool = 'search_files'", "query_argumnt = 'pattern'"]);
    await expect(startSidecar(t.args, { env: t.env })).rejects.toThrow(/\[web_search\] has unknown key 'query_argumnt' \(did you mean 'query_argument'\?\)/);
  }, 120_000);
});
