import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModelServer, type ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { startJaeger, tagsOf, type Jaeger, type JaegerSpan } from "../tracing/jaeger.ts";
import { runAgentProcess } from "./agent-process.ts";
import { leviath } from "./run-cli.ts";
import { callTool, makeTempDir, post, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// The real sidecar over real HTTP exporting its tool-call spans to a real Jaeger (v1.75.0, OTLP/HTTP in): the spans
// are read back from Jaeger's query API with their decision attributes, under the caller's trace, and with no
// private content anywhere: neither a private file's text (a private read's result) nor a later call's arguments
// once the context holds it (the default content level is public).
const SECRET = "SECRET-VAULT-TEXT-7f3a";
const PUBLIC = "PUBLIC-MARKER-51c2";
const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const PARENT_SPAN = "b7ad6b7169203331";

let root: string;
let jaeger: Jaeger;
let sc: SidecarProcess;
let spans: Map<string, JaegerSpan>;
let text: string;

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-tracing-");
  jaeger = await startJaeger();
  mkdirSync(join(root, "home", "vault"), { recursive: true });
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "home", "vault", "secret.txt"), `${SECRET}\n`);
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'traced'\n[read_paths]\nallow = ['~/vault']\n[security]\ntaint_tracking = true\n");
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nwrite_file = 'allow'\nweb_fetch = 'deny'\n[agent_read_paths.traced]\nallow = ['~/vault']\n");
  sc = await startSidecar([
    "--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"),
    "--otlp-traces-endpoint", jaeger.otlpEndpoint,
  ], { env: { LEVIATH_HOME: join(root, "home") } });
  // A public write under the caller's trace, a private read, a write of what it read, a denied call.
  const traced = await post(`${sc.url}/v1/tool-calls`, { id: "w-public", tool: "write_file", args: { path: "public.txt", content: PUBLIC } }, { traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01` });
  expect(traced.body).toMatchObject({ decision: "allow" });
  expect((await callTool(sc, "read_file", { path: join(root, "home", "vault", "secret.txt") }, "r-private")).body).toMatchObject({ decision: "allow", label: "private", taint: "private" });
  expect((await callTool(sc, "write_file", { path: "copy.txt", content: SECRET }, "w-copy")).body).toMatchObject({ decision: "allow" });
  expect((await callTool(sc, "web_fetch", { url: "https://example.com" }, "f-denied")).body).toMatchObject({ decision: "deny", code: "permission-denied" });
  // A stop sends what is queued before the process exits: everything is in Jaeger once it has.
  expect(await sc.stop()).toBe(0);
  const got = await jaeger.traces("leviath-sidecar");
  text = got.text;
  spans = new Map(got.data.flatMap((t) => t.spans).map((s) => [String(tagsOf(s)["gen_ai.tool.call.id"]), s]));
}, 600_000);

afterAll(async () => {
  await sc?.stop();
  await jaeger?.stop();
});

describe("leviath sidecar --otlp-traces-endpoint: spans in a real Jaeger", () => {
  it("exports one execute_tool span per call with its decision, source, stage, taint, Run and Agent", () => {
    expect([...spans.keys()].sort()).toEqual(["f-denied", "r-private", "w-copy", "w-public"]);
    const read = spans.get("r-private")!;
    expect(read.operationName).toBe("execute_tool read_file");
    expect(tagsOf(read)).toMatchObject({
      "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file", "span.kind": "internal",
      "leviath.decision": "allow", "leviath.decision.source": "auto_allow", "leviath.stage": "main", "leviath.run": "traced", "leviath.agent": expect.stringContaining("traced"),
      "leviath.mode": "interactive", "leviath.taint.before": "internal", "leviath.taint.after": "private", "leviath.result.label": "private",
    });
    // The first call saw a public context; its result (a written file's confirmation) is labelled internal.
    expect(tagsOf(spans.get("w-public")!)).toMatchObject({ "leviath.taint.before": "public", "leviath.taint.after": "internal", "leviath.decision.source": "auto_allow" });
    expect(tagsOf(spans.get("w-copy")!)).toMatchObject({ "leviath.taint.before": "private", "leviath.taint.after": "private", "leviath.decision": "allow" });
    expect(tagsOf(spans.get("f-denied")!)).toMatchObject({ "leviath.decision": "deny", "leviath.decision.code": "permission-denied", "error.type": "permission-denied", "otel.status_code": "ERROR" });
  });

  it("continues the caller's W3C trace context", () => {
    const span = spans.get("w-public")!;
    expect(span.traceID).toBe(TRACE_ID);
    expect(span.references).toEqual([expect.objectContaining({ refType: "CHILD_OF", traceID: TRACE_ID, spanID: PARENT_SPAN })]);
    // A call whose request carried no trace context starts its own.
    expect(spans.get("r-private")!.traceID).not.toBe(TRACE_ID);
  });

  it("exports public content, and none of a private read's text: not its result, not a later call's arguments", () => {
    expect(tagsOf(spans.get("w-public")!)["gen_ai.tool.call.arguments"]).toBe(JSON.stringify({ path: "public.txt", content: PUBLIC }));
    expect(tagsOf(spans.get("r-private")!)["gen_ai.tool.call.result"]).toBeUndefined();
    expect(tagsOf(spans.get("w-copy")!)["gen_ai.tool.call.arguments"]).toBeUndefined();
    expect(text).toContain(PUBLIC);
    expect(text).not.toContain(SECRET);
  });
});

const RUNTIME_AGENT = `[agent]
name = "tracer"
entry_stage = "only"

[stages.only]
mode = "output"
model = { models = [{ provider = "anthropic", model = "claude-test" }] }
available_tools = ["read_file", "submit_output"]
max_iterations = 4
system_prompt = "Read the notes and submit them."

[stages.only.output]
format = "text"
`;

describe("leviath agent with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: its model calls and the sidecar's tool calls in one trace", () => {
  let model: ScriptedModelServer | undefined;
  let agentSc: SidecarProcess | undefined;
  afterAll(async () => {
    await agentSc?.stop();
    await model?.close();
  });

  it("exports invoke_agent and chat spans, and the sidecar continues the run's trace over MCP", { timeout: 180_000 }, async () => {
    const dir = join(root, "runtime");
    mkdirSync(join(dir, "work"), { recursive: true });
    writeFileSync(join(dir, "work", "notes.md"), "ship it\n");
    writeFileSync(join(dir, "agent.leviath"), RUNTIME_AGENT);
    const imported = leviath(["import", join(dir, "agent.leviath")]);
    expect(imported.status, imported.stderr).toBe(0);
    const runtimeConfig = join(dir, "runtime.json");
    writeFileSync(runtimeConfig, JSON.stringify({ agent: (parseYaml(imported.stdout) as { spec: unknown }).spec, run: { task: "Read the notes.", inputs: {}, mode: "interactive" } }));
    model = await startScriptedModelServer([
      { turn: { calls: [{ name: "read_file", args: { path: "notes.md" } }] } },
      { turn: { text: "Done.", calls: [{ name: "submit_output", args: { output: "ship it" } }] } },
    ]);
    agentSc = await startSidecar(["--agent", join(dir, "agent.leviath"), "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit"), "--run", "tracer-run", "--otlp-traces-endpoint", jaeger.otlpEndpoint]);
    const r = await runAgentProcess(dir, runtimeConfig, agentSc, model, [], { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: jaeger.otlpEndpoint, LEVIATH_RUN: "tracer-run" });
    expect(r.stderr, r.stdout).toBe("");
    expect(r.code).toBe(0);
    expect(await agentSc.stop()).toBe(0);
    const runtime = (await jaeger.traces("leviath-runtime")).data;
    expect(runtime).toHaveLength(1);
    const trace = runtime[0]!;
    const runSpan = trace.spans.find((s) => s.operationName === "invoke_agent tracer")!;
    expect(tagsOf(runSpan)).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "tracer", "leviath.run": "tracer-run", "leviath.exit_code": 0 });
    const chats = trace.spans.filter((s) => s.operationName === "chat claude-test");
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(tagsOf(chat)).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test", "span.kind": "client" });
      expect(chat.references).toEqual([expect.objectContaining({ refType: "CHILD_OF", spanID: runSpan.spanID })]);
    }
    // The sidecar's spans of this run: in the runtime's trace, children of its run span (the traceparent in MCP's _meta).
    const tools = trace.spans.filter((s) => s.operationName.startsWith("execute_tool "));
    expect(tools.map((s) => [s.operationName, tagsOf(s)["leviath.decision"], tagsOf(s)["leviath.run"]]).sort()).toEqual([
      ["execute_tool read_file", "allow", "tracer-run"], ["execute_tool submit_output", "allow", "tracer-run"],
    ]);
    for (const span of tools) expect(span.references).toEqual([expect.objectContaining({ refType: "CHILD_OF", spanID: runSpan.spanID })]);
  });
});
