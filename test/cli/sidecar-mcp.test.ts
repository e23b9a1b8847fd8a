import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, get, makeTempDir, parseJsonLines, post, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";
import { repo } from "./run-cli.ts";

// An MCP client (the SDK's own, and the MCP Inspector's CLI) against the real standalone sidecar at /mcp: the
// same decisions, messages, prompts, audit and labels as /v1, and no way for the client to answer a prompt.
let root: string;
let sc: SidecarProcess;
let audit: string;
const run = "mcp";
const BLOCK_PROMPT = "Tool 'shell' would send Private-level data over a channel cleared only for Public. Allow it?";
const DENIED = "[blocked] Tool 'shell' would send data at private sensitivity, above its public clearance. Denied by user.";

async function connect(token: string | null = sc.runtimeToken): Promise<Client> {
  const client = new Client({ name: "leviath-test", version: "1.0.0" });
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${sc.url}/mcp`), { requestInit: { headers } }));
  return client;
}

const text = (r: CallToolResult) => r.content.map((c) => (c.type === "text" ? c.text : "")).join("");
const decisions = () => parseJsonLines(readFileSync(join(audit, run, "stages", "0", "decisions.jsonl"), "utf8"));

/** Answers the one prompt pending for `tool` with the approval token, as the person at the terminal would. */
async function answerPrompt(tool: string, decision: string): Promise<void> {
  for (;;) {
    const list = await get<{ approvals: { id: string; tool: string }[] }>(`${sc.url}/v1/approvals`);
    const pending = list.body.approvals.find((a) => a.tool === tool);
    if (pending !== undefined) {
      const r = await post(`${sc.url}/v1/approvals/${pending.id}`, { decision }, { authorization: `Bearer ${sc.token}` });
      expect(r.status).toBe(200);
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-mcp-");
  mkdirSync(join(root, "home", "vault"), { recursive: true });
  mkdirSync(join(root, "work"), { recursive: true });
  writeFileSync(join(root, "home", "vault", "secret.txt"), "vault secret\n");
  writeFileSync(join(root, "outside.txt"), "not granted\n");
  writeFileSync(join(root, "work", "notes.md"), "notes\n");
  writeFileSync(join(root, "agent.leviath"), `[agent]\nname = '${run}'\n[read_paths]\nallow = ['~/vault']\n[security]\ntaint_tracking = true\n`);
  writeFileSync(join(root, "config.toml"), `[tool_permissions]\nshell = 'allow'\nsubmit_output = 'allow'\n[agent_read_paths.${run}]\nallow = ['~/vault']\n`);
  audit = join(root, "audit");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", audit], {
    env: { LEVIATH_HOME: join(root, "home") },
  });
}, 60_000);

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

describe("the sidecar as an MCP server (SDK client)", () => {
  it("refuses a client without the runtime token, as /v1 does", async () => {
    await expect(connect(null)).rejects.toThrow(/401|runtime token/);
    const wrong = await fetch(`${sc.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${sc.token}` }, body: "{}" });
    expect(wrong.status).toBe(401);
  });

  it("lists the stage's tools with JSON Schemas and honest annotations", async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()]).toEqual(["read_file", "read_files", "list_dir", "write_file", "edit_file", "shell", "submit_output"]);
    expect(byName.get("read_file")).toMatchObject({ inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }, annotations: { readOnlyHint: true, openWorldHint: false } });
    expect(byName.get("list_dir")?.inputSchema.required ?? []).toEqual([]);
    expect(byName.get("shell")?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
    expect(byName.get("submit_output")?.inputSchema).toMatchObject({ properties: { output: { type: "string" } }, required: ["output"] });
    await client.close();
  });

  it("a granted read is the file, labelled by the sidecar; a refused one is isError with the /v1 message", async () => {
    const client = await connect();
    const ok = (await client.callTool({ name: "read_file", arguments: { path: "notes.md" } })) as CallToolResult;
    expect(ok.isError).toBe(false);
    expect(text(ok)).toBe("notes\n");
    expect(ok._meta?.["leviath.dev/label"]).toMatchObject({ label: "private", taint: "private", entry: { region: "conversation" } });
    const refused = (await client.callTool({ name: "read_file", arguments: { path: join(root, "outside.txt") } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    const v1 = await callTool(sc, "read_file", { path: join(root, "outside.txt") });
    expect(v1.status).toBe(403);
    expect(text(refused)).toBe(v1.body.message);
    // The machine-readable part rides in _meta: /v1's code and the audit's decision source.
    expect(refused._meta?.["leviath.dev/refusal"]).toEqual({ code: v1.body.code, source: "read_path" });
    expect(v1.body.code).toBe("not-declared");
    expect(text(refused)).toBe(`[error] path '${join(root, "outside.txt")}' is outside the working directory and not in this agent's [read_paths]`);
    // web_search: this policy names no search backend (sidecar-web-search.test.ts has one), so nothing executes it.
    const unknown = (await client.callTool({ name: "web_search", arguments: { query: "x" } })) as CallToolResult;
    expect(unknown).toMatchObject({ isError: true, content: [{ type: "text", text: "[unavailable] Tool 'web_search' is not available in stage 'main'." }], _meta: { "leviath.dev/refusal": { code: "tool-unavailable", source: "tool_unavailable" } } });
    const bad = (await client.callTool({ name: "read_file", arguments: { path: 42 } })) as CallToolResult;
    expect(text(bad)).toBe("[error] Invalid arguments for 'read_file': path: Invalid input: expected string, received number");
    await client.close();
  });

  it("after a private read, shell asks on the approval channel; a deny is the block text, an allow runs it", async () => {
    const client = await connect();
    await client.callTool({ name: "read_file", arguments: { path: "~/vault/secret.txt" } });
    const [denied] = await Promise.all([client.callTool({ name: "shell", arguments: { command: "echo leak" } }) as Promise<CallToolResult>, answerPrompt("shell", "deny")]);
    expect(denied).toMatchObject({ isError: true, content: [{ type: "text", text: DENIED }], _meta: { "leviath.dev/refusal": { code: "gate-denied", source: "user_denied" } } });
    const listed = answerPrompt("shell", "allowOnce");
    const allowed = (await client.callTool({ name: "shell", arguments: { command: "echo sent" } })) as CallToolResult;
    await listed;
    expect(allowed.isError).toBe(false);
    expect(text(allowed)).toBe("sent\n");
    const shells = decisions().filter((d) => d["tool_name"] === "shell");
    expect(shells.map((d) => [d["decision"], d["decision_source"]])).toEqual([["ask", "auto_block"], ["deny", "user_denied"], ["ask", "auto_block"], ["allow", "user_allow_once"]]);
    await client.close();
  });

  it("the prompt the MCP client waits on is the one /v1 lists; the runtime token cannot answer it", async () => {
    const client = await connect();
    await client.callTool({ name: "read_file", arguments: { path: "~/vault/secret.txt" } });
    const call = client.callTool({ name: "shell", arguments: { command: "echo again" } }) as Promise<CallToolResult>;
    let pending: { id: string; prompt: string } | undefined;
    while (pending === undefined) {
      pending = (await get<{ approvals: { id: string; tool: string; prompt: string }[] }>(`${sc.url}/v1/approvals`)).body.approvals.find((a) => a.tool === "shell");
    }
    expect(pending.prompt).toBe(BLOCK_PROMPT);
    expect((await post(`${sc.url}/v1/approvals/${pending.id}`, { decision: "allowOnce" })).status).toBe(401);
    await answerPrompt("shell", "deny");
    expect(text(await call)).toBe(DENIED);
    await client.close();
  });

  it("submit_output is gated like any outbound call, and confirmed once allowed", async () => {
    const client = await connect();
    const [blocked] = await Promise.all([client.callTool({ name: "submit_output", arguments: { output: "the answer" } }) as Promise<CallToolResult>, answerPrompt("submit_output", "deny")]);
    expect(blocked.isError).toBe(true);
    expect(text(blocked)).toBe("[blocked] Tool 'submit_output' would send data at private sensitivity, above its public clearance. Denied by user.");
    const [done] = await Promise.all([client.callTool({ name: "submit_output", arguments: { output: "the answer" } }) as Promise<CallToolResult>, answerPrompt("submit_output", "allowOnce")]);
    expect(done).toMatchObject({ isError: false, content: [{ type: "text", text: "Output submitted." }] });
    expect(decisions().filter((d) => d["tool_name"] === "submit_output").at(-1)).toMatchObject({ decision: "allow", decision_source: "user_allow_once" });
    await client.close();
  });
});

describe("sessions and stateless requests on /mcp", () => {
  const headers = () => ({ "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${sc.runtimeToken}` });
  const call = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.md"}}}';
  const resultOf = (text: string) => (JSON.parse(/^data: (.*)$/m.exec(text)?.[1] ?? "{}") as { result?: CallToolResult }).result;

  it("serves a tools/call without a session, and keeps an initialized client's session until it ends it", async () => {
    const stateless = await fetch(`${sc.url}/mcp`, { method: "POST", headers: headers(), body: call });
    expect(stateless.status).toBe(200);
    expect(resultOf(await stateless.text())).toMatchObject({ isError: false, content: [{ type: "text", text: "notes\n" }] });
    const client = await connect();
    const transport = (client as unknown as { transport: StreamableHTTPClientTransport }).transport;
    const id = transport.sessionId!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const inSession = await fetch(`${sc.url}/mcp`, { method: "POST", headers: { ...headers(), "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" }, body: call });
    expect(resultOf(await inSession.text())).toMatchObject({ isError: false });
    await transport.terminateSession();
    const gone = await fetch(`${sc.url}/mcp`, { method: "POST", headers: { ...headers(), "mcp-session-id": id }, body: call });
    expect(gone.status).toBe(404);
    // A session id never seen is refused the same way, never served as somebody's session.
    expect((await fetch(`${sc.url}/mcp`, { method: "POST", headers: { ...headers(), "mcp-session-id": "not-a-session" }, body: call })).status).toBe(404);
    await client.close();
  });
});

describe("what /mcp answers outside the core", () => {
  const headers = () => ({ "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${sc.runtimeToken}` });
  const rpc = (body: unknown) => fetch(`${sc.url}/mcp`, { method: "POST", headers: headers(), body: JSON.stringify(body) }).then((r) => r.text());
  const recorded = () => (existsSync(join(audit, run, "stages", "0", "decisions.jsonl")) ? decisions() : []);

  it("every refusal of a call is the core's, recorded, a malformed call's included; an unknown method records nothing", async () => {
    const before = recorded().length;
    const refused = await rpc({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "read_file", arguments: { path: 42 } } });
    expect(refused).toContain("Invalid arguments for 'read_file'");
    expect(recorded().slice(before).map((d) => [d["tool_name"], d["decision"], d["decision_source"], d["code"]])).toEqual([["read_file", "deny", "invalid_arguments", "invalid-arguments"]]);
    const malformed = await rpc({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "read_file", arguments: "notes.md" } });
    // The SDK's own answer to params its schema refuses: a JSON-RPC error (it says -32603), never a tool result;
    // the core refused (and recorded) the call before the SDK saw it.
    expect(malformed).toMatch(/"error":\{"code":-326\d\d,"message":".*expected record, received string/);
    const badName = await rpc({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: 7, arguments: {} } });
    expect(badName).toMatch(/"error":\{"code":-326\d\d/);
    expect(recorded().slice(before + 1).map((d) => [d["tool_name"], d["decision"], d["decision_source"], d["code"]])).toEqual([
      ["read_file", "deny", "invalid_arguments", "invalid-call"], ["7", "deny", "invalid_arguments", "invalid-call"],
    ]);
    const unknownMethod = await rpc({ jsonrpc: "2.0", id: 4, method: "tools/run", params: {} });
    expect(unknownMethod).toContain('"code":-32601');
    expect(recorded()).toHaveLength(before + 3);
  });
});

describe("the MCP Inspector's CLI against the sidecar", { timeout: 120_000 }, () => {
  // Run from its own build directory: it finds its package.json by a path it checks against the working
  // directory but imports relative to itself (inspector-cli 1.0.3).
  const build = repo("node_modules/@modelcontextprotocol/inspector-cli/build");
  const inspector = (args: string[]) =>
    promisify(execFile)(process.execPath, [join(build, "index.js"), `${sc.url}/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${sc.runtimeToken}`, ...args], { cwd: build });

  it("lists the tools", async () => {
    const { stdout } = await inspector(["--method", "tools/list"]);
    const names = (JSON.parse(stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toContain("read_file");
    expect(names).toContain("submit_output");
  });

  it("calls a granted and a refused read", async () => {
    const ok = JSON.parse((await inspector(["--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=notes.md"])).stdout) as CallToolResult;
    expect(ok).toMatchObject({ isError: false, content: [{ type: "text", text: "notes\n" }] });
    const refused = JSON.parse((await inspector(["--method", "tools/call", "--tool-name", "read_file", `--tool-arg`, `path=${join(root, "outside.txt")}`])).stdout) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(text(refused)).toBe(`[error] path '${join(root, "outside.txt")}' is outside the working directory and not in this agent's [read_paths]`);
  });
});
