import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { join } from "node:path";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { get, makeTempDir, parseJsonLines, post, scrapeMetrics, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// A client that gives up on a call waiting for approval (an MCP request cancelled or timed out, its session or
// connection closed; a /v1 wait whose connection drops) was told the call did not run: the call is withdrawn,
// its prompt closed, and an approval given afterwards is refused and runs nothing. And every refusal over /mcp,
// even of a tool the stage does not offer, is one audit record and one metric. Against the real sidecar.
let root: string;
let sc: SidecarProcess;
let audit: string;
const run = "withdraw";

interface Pending {
  id: string;
  callId: string;
  tool: string;
  prompt: string;
}

async function connect(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: "leviath-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${sc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${sc.runtimeToken}` } } });
  await client.connect(transport);
  return { client, transport };
}

const decisions = () => parseJsonLines(readFileSync(join(audit, run, "stages", "0", "decisions.jsonl"), "utf8"));
const pendingList = async () => (await get<{ approvals: Pending[] }>(`${sc.url}/v1/approvals`)).body.approvals;

/** Polls until `check` holds (or fails after 5 s, naming what was awaited). */
async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + 5000;
  for (;;) {
    const got = await check();
    if (got !== undefined) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The prompt raised for a shell command that would create `marker`. */
const promptFor = (marker: string) => until(`the prompt of ${marker}`, async () => (await pendingList()).find((p) => p.prompt.includes(marker)));

/**
 * After the client gave up, a person allows the prompt: the command never ran (the attack: on a sidecar that
 * keeps the prompt, the allow runs it), the prompt was gone from the pending list, the allow is refused 410
 * `approval-withdrawn`, and the audit holds the withdrawal.
 */
async function expectWithdrawn(p: Pending, marker: string, gaveUp: string): Promise<void> {
  const withdrawn = await until("the prompt to be withdrawn", async () => ((await pendingList()).some((q) => q.id === p.id) ? undefined : true)).then(() => true, () => false);
  const answered = await post(`${sc.url}/v1/approvals/${p.id}`, { decision: "allowOnce" }, { authorization: `Bearer ${sc.token}` });
  // The call's final answer: once it is settled nothing is left that could run it later.
  const final = await get(`${sc.url}/v1/tool-calls/${p.callId}?wait=10`);
  expect(existsSync(marker)).toBe(false);
  expect(final.body).toMatchObject({ decision: "deny", code: "client-gave-up" });
  expect(withdrawn).toBe(true);
  expect(answered).toEqual({ status: 410, body: { code: "approval-withdrawn", message: `prompt '${p.id}' was withdrawn: the client of its call gave up waiting, so the call was refused and will never run` } });
  expect(JSON.stringify((await get(`${sc.url}/v1/status`)).body)).not.toContain(p.id);
  const records = decisions().filter((d) => d["call_id"] === p.callId);
  expect(records.map((d) => [d["decision"], d["decision_source"], d["code"]])).toEqual([["ask", "permission_ask", undefined], ["deny", "client_gave_up", "client-gave-up"]]);
  expect(records[1]).toMatchObject({ tool_name: "shell", gave_up: gaveUp, withdrawn_approval_id: p.id });
}

/** A shell call waiting on its prompt while its client closes (v1 or v2 SDK): the call is withdrawn, as above. */
async function expectCloseWithdraws(client: { callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown>; close(): Promise<void> }, name: string): Promise<void> {
  const marker = join(root, "work", name);
  const call = client.callTool({ name: "shell", arguments: { command: `touch ${marker}` } }).catch((err: unknown) => err);
  const p = await promptFor(marker);
  await client.close();
  await call;
  await expectWithdrawn(p, marker, "cancelled");
}

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-mcp-withdraw-");
  mkdirSync(join(root, "work"), { recursive: true });
  writeFileSync(join(root, "agent.leviath"), `[agent]\nname = '${run}'\n`);
  // Every shell command asks: the prompt is what the client walks away from.
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nshell = 'ask'\n");
  audit = join(root, "audit");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", audit, "--metrics-listen", "127.0.0.1:0"]);
}, 60_000);

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

describe("an MCP client that gives up on a call waiting for approval", () => {
  it("cancels it (AbortSignal: notifications/cancelled): the prompt is withdrawn, a later allow is refused and runs nothing", async () => {
    const { client } = await connect();
    const marker = join(root, "work", "cancelled");
    const abort = new AbortController();
    const call = client.callTool({ name: "shell", arguments: { command: `touch ${marker}` } }, undefined, { signal: abort.signal });
    const p = await promptFor(marker);
    abort.abort("the user pressed Esc");
    await expect(call).rejects.toThrow();
    await expectWithdrawn(p, marker, "cancelled");
    await client.close();
  });

  it("times out (the SDK's request timeout sends notifications/cancelled): the same", async () => {
    const { client } = await connect();
    const marker = join(root, "work", "timed-out");
    const call = client.callTool({ name: "shell", arguments: { command: `touch ${marker}` } }, undefined, { timeout: 2000 });
    const p = await promptFor(marker);
    await expect(call).rejects.toThrow(/timed out/i);
    await expectWithdrawn(p, marker, "cancelled");
    await client.close();
  });

  it("ends its session (DELETE /mcp): the same", async () => {
    const { client, transport } = await connect();
    const marker = join(root, "work", "session-ended");
    const call = client.callTool({ name: "shell", arguments: { command: `touch ${marker}` } }).catch((err: unknown) => err);
    const p = await promptFor(marker);
    await transport.terminateSession();
    await client.close();
    await call;
    await expectWithdrawn(p, marker, "cancelled");
  });

  it("closes its connection without a word (client.close() keeps the session): the answer can never reach it, so the same", async () => {
    await expectCloseWithdraws((await connect()).client, "connection-closed");
  });

  it("on the 2026-07-28 revision (no session, one exchange a request), cancels it or closes: the same", async () => {
    const client = new ClientV2({ name: "leviath-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    await client.connect(new TransportV2(new URL(`${sc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${sc.runtimeToken}` } } }));
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    const marker = join(root, "work", "modern-cancelled");
    const abort = new AbortController();
    const call = client.callTool({ name: "shell", arguments: { command: `touch ${marker}` } }, { signal: abort.signal });
    const p = await promptFor(marker);
    abort.abort("the user pressed Esc");
    await expect(call).rejects.toThrow();
    await expectWithdrawn(p, marker, "cancelled");
    await expectCloseWithdraws(client, "modern-closed");
  });

  it("drops a stateless request (no session): the same", async () => {
    const marker = join(root, "work", "stateless");
    const abort = new AbortController();
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "shell", arguments: { command: `touch ${marker}` } } });
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${sc.runtimeToken}` };
    const res = await fetch(`${sc.url}/mcp`, { method: "POST", headers, body, signal: abort.signal });
    const p = await promptFor(marker);
    abort.abort();
    await res.text().catch(() => undefined);
    await expectWithdrawn(p, marker, "cancelled");
  });
});

describe("a /v1 client that drops its wait on a call waiting for approval", () => {
  it("withdraws the call: the prompt is closed, a later allow is refused and runs nothing", async () => {
    const marker = join(root, "work", "v1-wait-dropped");
    const asked = await post<{ decision: string }>(`${sc.url}/v1/tool-calls`, { id: "v1-dropped", tool: "shell", args: { command: `touch ${marker}` } });
    expect(asked).toMatchObject({ status: 202, body: { decision: "ask" } });
    const p = await promptFor(marker);
    // The wait's request is written whole, then the client hangs up without reading the answer.
    const url = new URL(`${sc.url}/v1/tool-calls/v1-dropped?wait=30`);
    await new Promise<void>((resolve, reject) => {
      const socket = connectTcp(Number(url.port), url.hostname, () => {
        socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${sc.runtimeToken}\r\n\r\n`, () => socket.end());
      });
      socket.on("error", reject);
      socket.on("close", () => resolve());
      socket.resume();
    });
    await expectWithdrawn(p, marker, "connection_closed");
  });

  it("withdraws a call its client no longer waits for once the last leviath-deadline it gave has passed", async () => {
    const marker = join(root, "work", "v1-deadline");
    const deadline = Date.now() + 1500;
    const asked = await post<{ decision: string }>(`${sc.url}/v1/tool-calls`, { id: "v1-deadline", tool: "shell", args: { command: `touch ${marker}` } }, { "leviath-deadline": String(deadline) });
    expect(asked).toMatchObject({ status: 202, body: { decision: "ask" } });
    const p = await promptFor(marker);
    // One wait renews it (its own deadline, as the client in src/runtime/sidecar-client.ts sends), then the client is gone.
    const waited = await get(`${sc.url}/v1/tool-calls/v1-deadline?wait=0.2`, { "leviath-deadline": String(Date.now() + 1500) });
    expect(waited.body).toMatchObject({ decision: "ask" });
    expect((await pendingList()).some((q) => q.id === p.id)).toBe(true);
    await expectWithdrawn(p, marker, "deadline");
  });
});

/** The sum of `leviath_sidecar_decisions_total` samples with these labels (any tool class and mode). */
function countDecisions(text: string, decision: string, source: string): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("leviath_sidecar_decisions_total{")) continue;
    if (line.includes(`decision="${decision}"`) && line.includes(`source="${source}"`)) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

describe("refusals over /mcp before anything runs", () => {
  it("a tool the stage does not offer, and one only a /v1 runtime can run, are each one audit record and one metric", async () => {
    const before = countDecisions(await scrapeMetrics(sc), "deny", "tool_unavailable");
    const { client } = await connect();
    for (const name of ["no_such_tool", "install_tool"]) {
      const r = (await client.callTool({ name, arguments: { url: "https://example.com" } })) as CallToolResult;
      expect(r).toMatchObject({ isError: true, content: [{ type: "text", text: `[unavailable] Tool '${name}' is not available in stage 'main'.` }], _meta: { "leviath.dev/refusal": { code: "tool-unavailable", source: "tool_unavailable" } } });
    }
    await client.close();
    expect(countDecisions(await scrapeMetrics(sc), "deny", "tool_unavailable") - before).toBe(2);
    const refused = decisions().filter((d) => d["tool_name"] === "no_such_tool" || d["tool_name"] === "install_tool");
    expect(refused.map((d) => [d["tool_name"], d["decision"], d["decision_source"], d["code"]])).toEqual([
      ["no_such_tool", "deny", "tool_unavailable", "tool-unavailable"],
      ["install_tool", "deny", "tool_unavailable", "tool-unavailable"],
    ]);
  });
});
