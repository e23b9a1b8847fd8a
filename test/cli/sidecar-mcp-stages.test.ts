import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2, type CallToolResult } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { get, makeTempDir, parseJsonLines, post, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// A two-stage Agent driven over /mcp by the real MCP clients against the real sidecar: `survey` offers its tools
// and `next_stage` (its one llm_choice edge, to `digest`); the move goes through the core (a `stage` record in
// the audit of the stage entered), the client is sent notifications/tools/list_changed, and listing again gives
// `digest`'s tools, where `survey`'s tool is refused as any tool the stage does not offer.
const AGENT = `[agent]
name = "stages"
entry_stage = "survey"

[stages.survey]
available_tools = ["read_file", "list_dir"]

[stages.survey.transitions.digest]
hint = "Enough has been read to write the digest"

[stages.digest]
mode = "output"
available_tools = ["write_file", "submit_output"]

[stages.digest.transitions]
`;
const run = "stages";
let root: string;
let sc: SidecarProcess;

const auth = () => ({ authorization: `Bearer ${sc.runtimeToken}` });
const text = (r: CallToolResult) => r.content.map((c) => (c.type === "text" ? c.text : "")).join("");
const decisions = (stage: number) => {
  const file = join(root, "audit", run, "stages", String(stage), "decisions.jsonl");
  return existsSync(file) ? parseJsonLines(readFileSync(file, "utf8")) : [];
};

beforeEach(async () => {
  root = makeTempDir("leviath-sidecar-mcp-stages-");
  mkdirSync(join(root, "work"), { recursive: true });
  writeFileSync(join(root, "work", "notes.md"), "notes\n");
  writeFileSync(join(root, "agent.leviath"), AGENT);
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nread_file = 'allow'\nlist_dir = 'allow'\nwrite_file = 'allow'\nsubmit_output = 'allow'\n");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit")]);
}, 60_000);

afterEach(async () => {
  expect(await sc.stop()).toBe(0);
});

/** Asserts the move survey → digest over one client: the notification, the new tools, the refusals, the audit. */
async function expectMove(client: { listTools(): Promise<{ tools: { name: string; inputSchema: unknown }[] }>; callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown> }, listChanged: () => number): Promise<void> {
  const first = await client.listTools();
  expect(first.tools.map((t) => t.name)).toEqual(["read_file", "list_dir", "next_stage"]);
  expect(first.tools.find((t) => t.name === "next_stage")?.inputSchema).toMatchObject({ properties: { stage: { type: "string", enum: ["digest"] } }, required: ["stage"] });
  const read = (await client.callTool({ name: "read_file", arguments: { path: "notes.md" } })) as CallToolResult;
  expect(text(read)).toBe("notes\n");
  // A stage this one does not lead to is refused, recorded, and the run stays where it is.
  const wrong = (await client.callTool({ name: "next_stage", arguments: { stage: "survey" } })) as CallToolResult;
  expect(wrong).toMatchObject({ isError: true, content: [{ type: "text", text: "[error] 'survey' is not a stage that stage 'survey' leads to (digest)" }], _meta: { "leviath.dev/refusal": { code: "transition-not-allowed", source: "transition" } } });
  expect((await get(`${sc.url}/v1/stage`, auth())).body).toMatchObject({ stage: "survey", index: 0, transitions: [{ to: "digest", condition: "llm_choice" }] });
  expect(listChanged()).toBe(0);
  const moved = (await client.callTool({ name: "next_stage", arguments: { stage: "digest", reason: "read enough" } })) as CallToolResult;
  expect(moved.isError).toBe(false);
  expect(text(moved)).toContain("Entered stage 'digest'");
  expect(listChanged()).toBe(1);
  const second = await client.listTools();
  expect(second.tools.map((t) => t.name)).toEqual(["write_file", "submit_output"]);
  const stale = (await client.callTool({ name: "read_file", arguments: { path: "notes.md" } })) as CallToolResult;
  expect(stale).toMatchObject({ isError: true, content: [{ type: "text", text: "[unavailable] Tool 'read_file' is not available in stage 'digest'." }], _meta: { "leviath.dev/refusal": { code: "tool-unavailable" } } });
  const again = (await client.callTool({ name: "next_stage", arguments: { stage: "digest" } })) as CallToolResult;
  expect(again).toMatchObject({ isError: true, _meta: { "leviath.dev/refusal": { code: "tool-unavailable" } } });
  expect((await get(`${sc.url}/v1/stage`, auth())).body).toEqual({ stage: "digest", index: 1, transitions: [] });
  // The audit: the refused transition in survey's, the move and the refused stale call in digest's.
  expect(decisions(0).filter((d) => d["tool_name"] === "next_stage").map((d) => [d["decision"], d["decision_source"], d["code"], d["from_stage"]])).toEqual([["deny", "transition", "transition-not-allowed", "survey"]]);
  expect(decisions(1).map((d) => [d["tool_name"], d["decision"], d["decision_source"], d["stage"], d["from_stage"]])).toEqual([
    ["next_stage", "stage", "llm_choice", "digest", "survey"],
    ["read_file", "deny", "tool_unavailable", "digest", undefined],
    ["next_stage", "deny", "tool_unavailable", "digest", undefined],
  ]);
}

/** A v2 client (2026-07-28) that counts `tools/list_changed`. */
async function connectV2(onChanged: () => void) {
  const client = new ClientV2({ name: "leviath-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  client.setNotificationHandler("notifications/tools/list_changed", onChanged);
  await client.connect(new TransportV2(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() } }));
  return client;
}

describe("a two-stage Agent over /mcp", () => {
  it("the v1 client (2025-11-25, in a session) moves stage with next_stage and hears tools/list_changed", async () => {
    const client = new ClientV1({ name: "leviath-test", version: "1.0.0" });
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    await client.connect(new TransportV1(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() } }));
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    await expectMove(client, () => changed);
    await client.close();
  });

  it("the v2 client (2026-07-28) does the same, and another one listening (subscriptions/listen) hears the change", async () => {
    let changed = 0;
    let heard = 0;
    let hear = () => undefined as void;
    const heardIt = new Promise<void>((resolve) => (hear = resolve));
    const client = await connectV2(() => void changed++);
    const watcher = await connectV2(() => {
      heard++;
      hear();
    });
    const subscription = await watcher.listen({ toolsListChanged: true });
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect(client.getServerCapabilities()?.tools).toMatchObject({ listChanged: true });
    await expectMove(client, () => changed);
    await heardIt;
    expect(heard).toBe(1);
    await subscription.close();
    await watcher.close();
    await client.close();
  });

  it("the runtime's POST /v1/stage takes the same path: the move is a stage record, and /mcp lists the new stage", async () => {
    const moved = await post(`${sc.url}/v1/stage`, { stage: "digest" }, auth());
    expect(moved).toEqual({ status: 200, body: { stage: "digest", index: 1, changed: true } });
    expect(decisions(1).map((d) => [d["tool_name"], d["decision"], d["decision_source"], d["from_stage"]])).toEqual([["stage", "stage", "runtime", "survey"]]);
    const client = new ClientV2({ name: "leviath-test", version: "1.0.0" });
    await client.connect(new TransportV2(new URL(`${sc.url}/mcp`), { requestInit: { headers: auth() } }));
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["write_file", "submit_output"]);
    await client.close();
  });

  it("POST /v1/stage follows only a declared transition (refused otherwise, recorded), and its move is heard on /mcp", async () => {
    let hear = () => undefined as void;
    const heardIt = new Promise<void>((resolve) => (hear = resolve));
    const watcher = await connectV2(() => hear());
    const subscription = await watcher.listen({ toolsListChanged: true });
    expect(await post(`${sc.url}/v1/stage`, { stage: "digest" }, auth())).toMatchObject({ status: 200, body: { changed: true } });
    await heardIt;
    // digest is terminal (an empty transitions table): back to survey is no declared move.
    expect(await post(`${sc.url}/v1/stage`, { stage: "survey" }, auth())).toEqual({ status: 403, body: { code: "transition-not-allowed", message: "[error] 'survey' is not a stage that stage 'digest' leads to (none: a terminal stage)" } });
    expect((await get(`${sc.url}/v1/stage`, auth())).body).toMatchObject({ stage: "digest", index: 1 });
    expect(decisions(1).map((d) => [d["tool_name"], d["decision"], d["decision_source"], d["code"]])).toEqual([["stage", "stage", "runtime", undefined], ["stage", "deny", "transition", "transition-not-allowed"]]);
    await subscription.close();
    await watcher.close();
  });
});
