import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerAndWait, callTool, get, makeTempDir, metricValue, scrapeMetrics, startSidecar, type CallAnswer, type SidecarProcess } from "./sidecar-harness.ts";
import { repo } from "./run-cli.ts";

// Real MCP servers from the npm registry behind the sidecar's gateway: server-everything over stdio (started
// confined by the sidecar) and over streamable HTTP, server-filesystem over stdio; a plain HTTP server that
// answers with a body over the cap. Tools are listed with prefixes, every call is gated, and each cap drops
// the connection with its message.
const EVERYTHING = repo("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const FILESYSTEM = repo("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const MIB = 1024 * 1024;
let root: string;
let sc: SidecarProcess;
let httpEverything: ChildProcess;
let huge: Server;
const run = "gw";

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function waitForHttp(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      await fetch(url, { method: "GET" });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${url} never answered`);
}

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-gw-");
  mkdirSync(join(root, "home", "vault"), { recursive: true });
  mkdirSync(join(root, "work"), { recursive: true });
  writeFileSync(join(root, "home", "vault", "secret.txt"), "vault secret\n");
  writeFileSync(join(root, "work", "notes.md"), "notes\n");
  const port = await freePort();
  httpEverything = spawn(process.execPath, [EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: "ignore" });
  await waitForHttp(`http://127.0.0.1:${port}/mcp`);
  // A minimal streamable-HTTP MCP peer whose tools/call reply is over a cap: on /json a JSON body past 64 MiB,
  // on /sse one SSE frame past 8 MiB (server-everything refuses requests over 4 MiB, so it cannot be made to
  // echo that much). It streams the reply; nothing past the cap is read by the sidecar.
  huge = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const msg = JSON.parse(body || "{}") as { id?: number; method?: string };
      const reply = (result: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }));
      if (msg.method === "initialize") return reply({ protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "huge", version: "1" } });
      if (msg.id === undefined) return res.writeHead(202).end();
      if (msg.method === "tools/list") return reply({ tools: [{ name: "big", inputSchema: { type: "object" } }] });
      const sse = req.url === "/sse";
      res.writeHead(200, { "content-type": sse ? "text/event-stream" : "application/json" });
      res.on("error", () => undefined);
      const chunk = Buffer.alloc(MIB, 0x61);
      let sent = 0;
      if (sse) res.write("event: message\ndata: ");
      const write = () => {
        while (sent <= (sse ? 8 : 64) * MIB) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", write);
        }
        res.end();
      };
      write();
    });
  }).listen(0, "127.0.0.1");
  await new Promise((r) => huge.once("listening", r));
  const hugePort = (huge.address() as AddressInfo).port;
  writeFileSync(join(root, "agent.leviath"), `[agent]\nname = '${run}'\n[read_paths]\nallow = ['~/vault']\n[security]\ntaint_tracking = true\n`);
  writeFileSync(join(root, "config.toml"), [
    "[tool_permissions]", "everything__echo = 'allow'", "web__echo = 'allow'", "files__list_directory = 'allow'", "json__big = 'allow'", "sse__big = 'allow'",
    `[agent_read_paths.${run}]`, "allow = ['~/vault']",
    "[[mcp_servers]]", "name = 'everything'", `command = '${process.execPath}'`, `args = ['${EVERYTHING}', 'stdio']`,
    "[[mcp_servers]]", "name = 'web'", `url = 'http://127.0.0.1:${port}/mcp'`, "headers = { 'X-Team' = '${GW_TEAM}' }",
    "[[mcp_servers]]", "name = 'files'", `command = '${process.execPath}'`, `args = ['${FILESYSTEM}', '${join(root, "work")}']`,
    "[[mcp_servers]]", "name = 'json'", `url = 'http://127.0.0.1:${hugePort}/json'`,
    "[[mcp_servers]]", "name = 'sse'", `url = 'http://127.0.0.1:${hugePort}/sse'`,
    "",
  ].join("\n"));
  writeFileSync(join(root, "policy.toml"), "[mcp_overrides.files.tools.list_directory]\nclearance = 'private'\n");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--policy", join(root, "policy.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--metrics-listen", "127.0.0.1:0"], {
    env: { LEVIATH_HOME: join(root, "home"), GW_TEAM: "blue" },
  });
}, 120_000);

afterAll(async () => {
  httpEverything?.kill();
  huge?.closeAllConnections();
  huge?.close();
  expect(await sc.stop()).toBe(0);
});

describe("the MCP gateway", () => {
  it("offers each server's tools as <server>__<tool> over MCP", async () => {
    const client = new Client({ name: "leviath-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${sc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${sc.runtimeToken}` } } }));
    const names = (await client.listTools()).tools.map((t) => t.name);
    await client.close();
    expect(names).toContain("everything__echo");
    expect(names).toContain("web__echo");
    expect(names).toContain("files__list_directory");
    expect(names).toContain("read_file");
    expect(names).toContain("sse__big");
  });

  it("carries a call while the context is public, and labels the result", async () => {
    const r = await callTool(sc, "everything__echo", { message: "hi" }, "e1");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ decision: "allow", result: "Echo: hi", isError: false, label: "public" });
    expect((await callTool(sc, "web__echo", { message: "over http" }, "e2")).body).toMatchObject({ decision: "allow", result: "Echo: over http" });
  });

  it("refuses a name no server listed, even in a declared server's namespace", async () => {
    const r = await callTool(sc, "everything__no_such_tool", {}, "e3");
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "tool-unavailable", message: "[unavailable] Tool 'everything__no_such_tool' is not available in stage 'main'." });
    expect((await callTool(sc, "json__anything", {}, "e3b")).body).toMatchObject({ code: "tool-unavailable" });
  });

  it("gates an unclassified MCP tool as outbound once the context is private; [mcp_overrides] clears one", async () => {
    expect((await callTool(sc, "read_file", { path: "~/vault/secret.txt" }, "r1")).body).toMatchObject({ taint: "private" });
    const ask = await callTool(sc, "everything__echo", { message: "vault secret" }, "e4");
    expect(ask.status).toBe(202);
    expect(ask.body.approval).toMatchObject({ kind: "taint_gate", prompt: "Tool 'everything__echo' would send Private-level data over a channel cleared only for Public. Allow it?" });
    const denied = await answerAndWait(sc, ask.body.approval!.id, "e4", "deny");
    expect(denied.body).toMatchObject({ decision: "deny", message: "[blocked] Tool 'everything__echo' would send data at private sensitivity, above its public clearance. Denied by user." });
    const cleared = await callTool(sc, "files__list_directory", { path: join(root, "work") }, "f1");
    expect(cleared.body).toMatchObject({ decision: "allow", isError: false });
    expect(cleared.body.result).toContain("notes.md");
  });

  it("drops a stdio server at a line over 1 MiB, and the next call starts it again", async () => {
    const r = await callTool(sc, "everything__echo", { message: "x".repeat(MIB) }, "c1");
    // The context is private now: allow the gate, then the reply is capped.
    const done = r.status === 202 ? await answerAndWait(sc, r.body.approval!.id, "c1", "allowForRun") : r;
    expect(done.body).toMatchObject({ decision: "allow", isError: true });
    expect(done.body.result).toMatch(/^\[error\] Failed to read from MCP server: line exceeded 1 MiB from the MCP server/);
    expect((await callTool(sc, "everything__echo", { message: "again" }, "c2")).body).toMatchObject({ result: "Echo: again", isError: false });
  });

  it("drops an HTTP server at an SSE frame over 8 MiB, and at a body over 64 MiB", async () => {
    for (const [server, message] of [["sse", "stream frame exceeded 8 MiB from 127.0.0.1"], ["json", "response body exceeded 64 MiB from 127.0.0.1"]] as const) {
      const r = await callTool(sc, `${server}__big`, {}, `c-${server}`);
      let done = r.status === 202 ? await answerAndWait(sc, r.body.approval!.id, `c-${server}`, "allowForRun") : r;
      // Allowed, the call streams up to 64 MiB before the cap drops it: on a loaded machine that outlasts one 10 s wait.
      if (done.body.decision === "ask") done = await get<CallAnswer>(`${sc.url}/v1/tool-calls/c-${server}?wait=60`);
      expect(done.body).toMatchObject({ decision: "allow", isError: true, result: `[error] ${message}` });
    }
    const metrics = await scrapeMetrics(sc);
    expect(metricValue(metrics, "leviath_sidecar_mcp_gateway_calls_total", { server: "sse", outcome: "error" })).toBe(1);
    expect(metricValue(metrics, "leviath_sidecar_mcp_gateway_calls_total", { server: "json", outcome: "error" })).toBe(1);
    expect(metricValue(metrics, "leviath_sidecar_mcp_gateway_calls_total", { server: "everything", outcome: "ok" })).toBeGreaterThanOrEqual(2);
  });
});
