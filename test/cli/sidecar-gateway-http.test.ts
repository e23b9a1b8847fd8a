import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../src/api/run-policy.ts";
import type { McpServer } from "../../src/api/leviath-policy.ts";
import { startMcpHttpServer, type McpHttpServer } from "../fixtures/mcp-http-server.ts";
import { callTool, get, makeTempDir, post, runtimeAuth, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// The gateway's HTTP servers in the cluster's shape (--run-policy, --mcp-secrets-dir laid out as the kubelet mounts
// the Secrets): a header's ${VAR} is the key of that server's own Secret, never the environment; a missing key
// keeps the server unoffered and says so; a redirect never carries the header elsewhere. A reload connects the
// servers it adds (offered from the next stage on) and drops the ones it removes at once, and a server that lists
// more tools mid-run never gets them offered. Every server here is a real streamable-HTTP MCP server (the SDK's).
const SECRET = "s3cret-from-the-secret";
let root: string;
let sc: SidecarProcess;
let tickets: McpHttpServer;
let elsewhere: McpHttpServer;
let late: McpHttpServer;
let mount: string;
let version = 0;

/** The kubelet's ConfigMap volume layout, swapped atomically. */
function publish(servers: McpServer[]): void {
  const connectors = ["tickets", "nokey", "moved", "late"];
  const stage = (name: string) => ({ name, availableConnectors: connectors, sandbox: { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" } });
  const policy = RunPolicySchema.parse({
    agent: { key: "default/gw-http", name: "gw-http" },
    stages: [stage("first"), stage("second")],
    entryStage: "first",
    launch: { mode: "interactive", allow: [] },
    toolPermissions: { blueprint: {}, ceiling: { tickets__lookup: "allow", tickets__exfiltrate: "allow", late__ping: "allow" }, allowBlueprintPermissions: false },
    readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
    taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
    mcpServers: servers,
    limits: { interactionTimeoutSeconds: 3600, shellTimeoutSeconds: 60 },
  });
  const dir = join(mount, `..v${++version}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "run-policy.json"), JSON.stringify(policy));
  symlinkSync(`..v${version}`, join(mount, "..data_tmp"));
  renameSync(join(mount, "..data_tmp"), join(mount, "..data"));
}

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

type ServerState = { name: string; offered: boolean; tools: number; message?: string };
const status = async () => (await get<{ mcpServers?: ServerState[] }>(`${sc.url}/v1/status`, runtimeAuth(sc.url))).body;
const stateOf = async (name: string) => (await status()).mcpServers?.find((s) => s.name === name);

async function listOverMcp(): Promise<string[]> {
  const client = new Client({ name: "leviath-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${sc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${sc.runtimeToken}` } } }));
  const names = (await client.listTools()).tools.map((t) => t.name);
  await client.close();
  return names;
}

const ticketsServer = (): McpServer => ({ name: "tickets", url: tickets.url, headers: { Authorization: "Bearer ${TICKETS_TOKEN}" }, secretRef: { name: "tickets-mcp" } });
const nokeyServer = (): McpServer => ({ name: "nokey", url: tickets.url, headers: { Authorization: "Bearer ${NOT_IN_SECRET}" }, secretRef: { name: "tickets-mcp" } });
const movedServer = (): McpServer => ({ name: "moved", url: tickets.url.replace("/mcp", "/moved/mcp"), headers: { Authorization: "Bearer ${TICKETS_TOKEN}" }, secretRef: { name: "tickets-mcp" } });

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-gw-http-");
  mkdirSync(join(root, "work"));
  // What the kubelet makes of a Secret volume: one file per key (the sidecar's alone in a cluster).
  mkdirSync(join(root, "mcp-secrets", "tickets-mcp"), { recursive: true });
  writeFileSync(join(root, "mcp-secrets", "tickets-mcp", "TICKETS_TOKEN"), SECRET);
  tickets = await startMcpHttpServer({ expected: `Bearer ${SECRET}`, tools: ["lookup"] });
  elsewhere = await startMcpHttpServer({ expected: undefined, tools: ["anything"] });
  late = await startMcpHttpServer({ expected: undefined, tools: ["ping"] });
  tickets.redirectTo = elsewhere.url;
  mount = join(root, "policy");
  publish([ticketsServer(), nokeyServer(), movedServer()]);
  symlinkSync("..data/run-policy.json", join(mount, "run-policy.json"));
  sc = await startSidecar([
    "--run-policy", join(mount, "run-policy.json"), "--run", "gw-http", "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"),
    "--reload-interval-ms", "100", "--mcp-secrets-dir", join(root, "mcp-secrets"),
  ], { env: { TICKETS_TOKEN: "from-the-environment", NOT_IN_SECRET: "from-the-environment" } });
  await until(status, (s) => (s.mcpServers ?? []).every((m) => m.message !== "connecting"));
}, 120_000);

afterAll(async () => {
  if (sc) expect(await sc.stop()).toBe(0);
  await Promise.all([tickets?.close(), elsewhere?.close(), late?.close()]);
});

describe("the gateway's HTTP servers with headers from Secrets", { timeout: 120_000 }, () => {
  it("sends the Secret's value (not the environment's) to the server, which checks it", async () => {
    expect(await stateOf("tickets")).toEqual({ name: "tickets", offered: true, tools: 1 });
    const r = await callTool(sc, "tickets__lookup", { text: "T-1" }, "t1");
    expect(r.body).toMatchObject({ decision: "allow", isError: false, result: 'lookup: authorized, got {"text":"T-1"}' });
    // Every request it had came with the Secret's value (the server answers 401 to anything else).
    expect(tickets.seen.length).toBeGreaterThan(0);
    expect([...new Set(tickets.seen)]).toEqual([`Bearer ${SECRET}`]);
  });

  it("a key missing from the Secret keeps that server unoffered and names the server and the key", async () => {
    const s = await stateOf("nokey");
    expect(s).toMatchObject({ name: "nokey", offered: false, tools: 0 });
    expect(s?.message).toBe("mcp server 'nokey' header 'Authorization': key 'NOT_IN_SECRET' is not in Secret 'tickets-mcp'");
    expect((await callTool(sc, "nokey__lookup", {}, "n1")).body).toMatchObject({ decision: "deny", code: "tool-unavailable" });
    // It never reached the server with the environment's value, nor with an empty one.
    expect(tickets.seen).not.toContain("Bearer from-the-environment");
    expect(tickets.seen).not.toContain("Bearer ");
  });

  it("never follows a redirect: the Secret's header stays with the admin's URL", async () => {
    expect(await stateOf("moved")).toMatchObject({ offered: false });
    expect(elsewhere.seen).toEqual([]);
    expect((await callTool(sc, "moved__anything", {}, "m1")).body).toMatchObject({ code: "tool-unavailable" });
  });

  it("a server that lists more tools mid-run never gets them offered", async () => {
    tickets.tools = ["lookup", "exfiltrate"];
    // Its connection is dropped and opened again: the new listing still adds nothing.
    expect((await callTool(sc, "tickets__lookup", {}, "t2")).body).toMatchObject({ decision: "allow", isError: false });
    expect(await listOverMcp()).not.toContain("tickets__exfiltrate");
    expect((await callTool(sc, "tickets__exfiltrate", {}, "t3")).body).toMatchObject({ decision: "deny", code: "tool-unavailable" });
  });

  it("a reload drops a removed server at once and connects an added one, offered from the next stage only", async () => {
    const before = tickets.seen.length;
    publish([nokeyServer(), { name: "late", url: late.url }]);
    await until(status, (s) => (s.mcpServers ?? []).some((m) => m.name === "late" && m.offered));
    expect((await status()).mcpServers?.map((m) => m.name).sort()).toEqual(["late", "nokey"]);
    // Removed: refused, and the server hears nothing more.
    expect((await callTool(sc, "tickets__lookup", {}, "t4")).body).toMatchObject({ decision: "deny", code: "tool-unavailable" });
    expect(tickets.seen.length).toBe(before);
    // Added mid-stage: connected (it was listed), but not offered to the stage that was running.
    expect(late.seen.length).toBeGreaterThan(0);
    expect(await listOverMcp()).not.toContain("late__ping");
    expect((await callTool(sc, "late__ping", {}, "l1")).body).toMatchObject({ decision: "deny", code: "tool-unavailable" });
    // The next stage starts with it.
    expect((await post(`${sc.url}/v1/stage`, { stage: "second" }, runtimeAuth(sc.url))).status).toBe(200);
    expect(await listOverMcp()).toContain("late__ping");
    expect((await callTool(sc, "late__ping", { text: "hi" }, "l2")).body).toMatchObject({ decision: "allow", result: 'ping: authorized, got {"text":"hi"}' });
  });
});
