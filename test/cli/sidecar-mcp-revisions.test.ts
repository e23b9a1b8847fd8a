import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2, type CallToolResult } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// Which MCP revision each real client negotiates with the real sidecar over HTTP: the v2 SDK's client, probing
// with `server/discover`, gets 2026-07-28 from its first request (no failed probe, no second try); the same client
// in its default mode and the v1 SDK's client get 2025-11-25 by `initialize`. Each lists and calls a tool.
let root: string;
let sc: SidecarProcess;

/** Each HTTP exchange a client made: its method, JSON-RPC method and status. */
interface Exchange {
  readonly http: string;
  readonly rpc: string | undefined;
  readonly status: number;
}

/** A fetch that records what the client sent and what it got back. */
function recordingFetch(log: Exchange[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const body = typeof init?.body === "string" ? (JSON.parse(init.body) as { method?: string }) : undefined;
    log.push({ http: init?.method ?? "GET", rpc: body?.method, status: res.status });
    return res;
  };
}

const auth = () => ({ authorization: `Bearer ${sc.runtimeToken}` });
const text = (r: CallToolResult) => r.content.map((c) => (c.type === "text" ? c.text : "")).join("");

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-mcp-revisions-");
  mkdirSync(join(root, "work"), { recursive: true });
  writeFileSync(join(root, "work", "notes.md"), "notes\n");
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'revisions'\n");
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nread_file = 'allow'\n");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit")]);
}, 60_000);

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

describe("the revision each real client negotiates", () => {
  it("the v2 client probing with server/discover gets 2026-07-28 at once: no failed probe, no initialize", async () => {
    const log: Exchange[] = [];
    const client = new ClientV2({ name: "leviath-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    await client.connect(new TransportV2(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() }, fetch: recordingFetch(log) }));
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect(log).toEqual([{ http: "POST", rpc: "server/discover", status: 200 }]);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("read_file");
    const r = await client.callTool({ name: "read_file", arguments: { path: "notes.md" } });
    expect(r.isError).toBe(false);
    expect(text(r)).toBe("notes\n");
    expect(r._meta?.["leviath.dev/label"]).toMatchObject({ label: "public", taint: "public", entry: { region: "conversation" } });
    expect(log.map((e) => e.rpc)).toEqual(["server/discover", "tools/list", "tools/call"]);
    expect(log.every((e) => e.status === 200)).toBe(true);
    await client.close();
  });

  it("the v2 client in its default mode initializes at 2025-11-25", async () => {
    const log: Exchange[] = [];
    const client = new ClientV2({ name: "leviath-test", version: "1.0.0" });
    await client.connect(new TransportV2(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() }, fetch: recordingFetch(log) }));
    expect(client.getNegotiatedProtocolVersion()).toBe("2025-11-25");
    expect(log[0]).toEqual({ http: "POST", rpc: "initialize", status: 200 });
    const r = await client.callTool({ name: "read_file", arguments: { path: "notes.md" } });
    expect(text(r)).toBe("notes\n");
    expect(log.some((e) => e.rpc === "server/discover")).toBe(false);
    await client.close();
  });

  it("the v1 client initializes at 2025-11-25, in a session", async () => {
    const client = new ClientV1({ name: "leviath-test", version: "1.0.0" });
    const transport = new TransportV1(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() } });
    await client.connect(transport);
    expect(transport.protocolVersion).toBe("2025-11-25");
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("read_file");
    const r = (await client.callTool({ name: "read_file", arguments: { path: "notes.md" } })) as CallToolResult;
    expect(text(r)).toBe("notes\n");
    await client.close();
  });
});

describe("a client naming a revision the sidecar does not know", () => {
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${sc.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...auth(), ...headers }, body: JSON.stringify(body) });
  const future = "2099-01-01";

  it("initialize with a future revision is answered with the newest the handshake carries (2025-11-25)", async () => {
    const res = await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: future, capabilities: {}, clientInfo: { name: "x", version: "1" } } });
    const event = /^data: (.*)$/m.exec(await res.text())?.[1];
    expect(JSON.parse(event ?? "{}")).toMatchObject({ id: 1, result: { protocolVersion: "2025-11-25", serverInfo: { name: "leviath-sidecar" } } });
  });

  it("server/discover with a future revision is told the revision served (2026-07-28), which the client then uses", async () => {
    const meta = { "io.modelcontextprotocol/protocolVersion": future, "io.modelcontextprotocol/clientInfo": { name: "x", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };
    const res = await post({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: meta } }, { "mcp-protocol-version": future, "mcp-method": "server/discover" });
    expect(await res.json()).toMatchObject({ id: 1, error: { code: -32022, data: { supported: ["2026-07-28"], requested: future } } });
    const client = new ClientV2({ name: "leviath-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" }, supportedProtocolVersions: [future, "2026-07-28", "2025-11-25"] });
    await client.connect(new TransportV2(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() } }));
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    await client.close();
  });
});

describe("what /mcp holds open, capped", () => {
  it("at most 8 2025-era sessions: a ninth ends the oldest, whose id is then unknown", async () => {
    const clients: { client: ClientV1; transport: TransportV1 }[] = [];
    for (let i = 0; i < 9; i++) {
      const client = new ClientV1({ name: `leviath-test-${i}`, version: "1.0.0" });
      const transport = new TransportV1(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() } });
      await client.connect(transport);
      clients.push({ client, transport });
    }
    const listBy = (id: string) =>
      fetch(`${sc.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": id, ...auth() }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' });
    expect((await listBy(clients[0]!.transport.sessionId!)).status).toBe(404);
    expect((await listBy(clients[1]!.transport.sessionId!)).status).toBe(200);
    for (const { client } of clients) await client.close();
  });

  it("at most 8 open subscriptions/listen streams of 2026-era clients: a ninth is refused", async () => {
    const client = new ClientV2({ name: "leviath-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    await client.connect(new TransportV2(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() } }));
    const open = [];
    for (let i = 0; i < 8; i++) open.push(await client.listen({ toolsListChanged: true }));
    await expect(client.listen({ toolsListChanged: true })).rejects.toThrow(/Subscription limit reached/);
    for (const s of open) await s.close();
    await client.close();
  });
});
