// Issue 43's traces on the real node: the chart installed with `tracing.endpoint` naming a real Jaeger (v1.75.0,
// test/tracing/jaeger.ts) whose OTLP/HTTP receiver listens on the node's own address, where the engine pods reach it
// as they reach the model stand-ins and the integrity test's site (harness/attacker-site.ts). Two Runs of the
// reference runtime (the leviath-agent image), each with a scripted model on the node's address: one cold, one
// adopting a warm pool pod (made before any Run, so its runtime's tracing endpoint came from the pool pod's spec).
// Each Run's model asks for an allowed listing, a denied web_fetch, a read of a granted path whose text is private
// (a ConfigMap volume), a write that copies that text into its arguments, and submit_output, let through the taint
// gate by an allowlist rule. Checked from Jaeger's query API alone: each Run is ONE trace, the runtime's
// `invoke_agent` and `chat` spans and the sidecar's `execute_tool` spans, children of the run span; each tool span
// carries the decision, its source, the rule, the taint before and after, the stage, the Run and the Agent, the same
// as the Run's audit record of that call; and the private text is nowhere in what Jaeger stored (while the public
// arguments of the first call are, and the model did receive the private text).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startScriptedModelServer, type ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import { startJaeger, tagsOf, type Jaeger, type JaegerSpan, type JaegerTrace } from "../tracing/jaeger.ts";
import { buildCredentialSecret } from "./harness/flow-objects.ts";
import { getJson, imageValues } from "./harness/kube-json.ts";
import { applyObjects, cleanUp, conditionOf, installOperator, NS, parseAudit, readAuditText, waitForPhase, type RunObject } from "./harness/operator-fixture.ts";
import { waitForReadyPoolPod } from "./harness/pool-pods.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const SECRET = `SECRET-TRACE-TEXT-${randomBytes(6).toString("hex")}`;
const SECRET_PATH = "/data/trace-secret";
const MODEL = "claude-sonnet-4-6";
const OUTPUT = "the notes are read\n";
/** The two Runs: each its own Agent (the warm one has a pool of one), model and credential Secret. */
const RUNS = {
  cold: { agent: "trace-cold", run: "trace-cold-run", secret: "trace-cold-model" },
  warm: { agent: "trace-warm", run: "trace-warm-run", secret: "trace-warm-model" },
} as const;
type Kind = keyof typeof RUNS;
const KINDS = ["cold", "warm"] as const;
/** The tools each Run's model calls, in order: what its execute_tool spans are found by. */
const TOOLS = ["list_dir", "web_fetch", "read_file", "write_file", "submit_output"] as const;
const say = (text: string) => process.stderr.write(`[e2e tracing-run] ${text}\n`);

/** The model's script: a listing and a denied fetch, the private read, a write of what it read, the output. */
function script() {
  return [
    { turn: { text: "Looking around.", calls: [{ name: "list_dir", args: { path: "." } }, { name: "web_fetch", args: { url: "https://example.com/notes" } }] } },
    { turn: { calls: [{ name: "read_file", args: { path: `${SECRET_PATH}/notes.md` } }] } },
    { turn: { calls: [{ name: "write_file", args: { path: "copy.md", content: SECRET } }] } },
    { turn: { text: "Done.", calls: [{ name: "submit_output", args: { output: OUTPUT } }] } },
  ];
}

function buildAgent(name: string, sandbox: string): Record<string, unknown> {
  return {
    apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name, namespace: NS },
    spec: {
      agent: { name, version: "1.0.0", description: "e2e tracing, reference runtime" },
      sandbox: { kind: "container", image: sandbox, network: false, onUnavailable: "error" },
      readPaths: { allow: [SECRET_PATH] },
      toolPermissions: { list_dir: "allow", read_file: "allow", write_file: "allow", web_fetch: "deny", submit_output: "allow" },
      stages: [{
        name: "main", availableTools: [...TOOLS],
        runtime: { mode: "output", model: { models: [{ provider: "anthropic", model: MODEL }] }, max_iterations: 8 },
      }],
    },
  };
}

/** The trace of Run `run`: the one whose `invoke_agent` span names it, among the runtime's traces. */
function traceOf(traces: readonly JaegerTrace[], run: string): JaegerTrace | undefined {
  return traces.find((t) => t.spans.some((s) => s.operationName.startsWith("invoke_agent ") && tagsOf(s)["leviath.run"] === run));
}

/** Whether the trace holds the run span, every tool's span and the last model call (the sidecar's spans come at its stop). */
function isComplete(trace: JaegerTrace | undefined): boolean {
  if (trace === undefined) return false;
  const names = trace.spans.map((s) => s.operationName);
  return TOOLS.every((t) => names.includes(`execute_tool ${t}`)) && names.filter((n) => n === `chat ${MODEL}`).length === script().length;
}

describe("a Run's spans on the real node, queried back from a real Jaeger", () => {
  const agentImage = node.images["leviath-agent"];
  const sandbox = node.images.sandbox!;
  let jaeger: Jaeger | undefined;
  const models: Partial<Record<Kind, ScriptedModelServer>> = {};
  const traces: Partial<Record<Kind, JaegerTrace>> = {};
  let poolPod = "";

  beforeAll(async () => {
    if (!agentImage) throw new Error("no leviath-agent image: run 'bash scripts/build-images'");
    // On the node's own address: the engine pods reach it as they reach the model stand-ins.
    jaeger = await startJaeger({ otlpHost: node.network.gateway });
    for (const kind of KINDS) models[kind] = await startScriptedModelServer(script(), node.network.gateway);
  }, 600_000);

  afterAll(async () => {
    for (const kind of KINDS) say(`${kind} model: ${models[kind]?.requests.length ?? 0} requests, ${models[kind]?.remaining() ?? "?"} steps left`);
    // The Agents own their unbound pool pods: they go with them (before the chart, whose controller would refill them).
    await kubectl(["delete", "agent", ...KINDS.map((k) => RUNS[k].agent), "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await kubectl(["delete", "secret", ...KINDS.map((k) => RUNS[k].secret), "-n", NS, "--ignore-not-found"], { allowFailure: true });
    await kubectl(["delete", "configmap", "trace-secret", "-n", NS, "--ignore-not-found"], { allowFailure: true });
    await cleanUp(KINDS.map((k) => RUNS[k].run));
    await kubectl(["delete", "pods,persistentvolumeclaims", "-n", NS, "-l", `leviath.dev/pool=${RUNS.warm.agent}`, "--ignore-not-found"], { allowFailure: true, timeoutMs: 120_000 });
    for (const kind of KINDS) await models[kind]?.close();
    await jaeger?.stop();
  });

  it("installs the chart with tracing.endpoint on the collector and a warm pool for one Agent", async () => {
    await installOperator(node, {
      agent: { image: imageValues(agentImage!) },
      controller: { warmPools: true },
      tracing: { endpoint: jaeger!.otlpEndpoint, content: "public" },
      policy: {
        spec: {
          sandbox: { kind: "container", image: sandbox, onUnavailable: "error" },
          security: { taintTracking: true },
          toolPermissions: { list_dir: "allow", read_file: "allow", write_file: "allow", web_fetch: "deny", submit_output: "allow" },
          readPaths: {
            perAgent: Object.fromEntries(KINDS.map((k) => [`${NS}/${RUNS[k].agent}`, [SECRET_PATH]])),
            volumes: [{ path: SECRET_PATH, volume: { configMap: { name: "trace-secret" } } }],
          },
          // After the private read the output is outbound at public clearance: this rule lets it through unasked.
          taint: { allowlist: [{ tool: "submit_output", maxSensitivity: "private" }] },
          pools: [{ agent: `${NS}/${RUNS.warm.agent}`, size: 1 }],
        },
      },
    });
    await applyObjects([
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "trace-secret", namespace: NS }, data: { "notes.md": `${SECRET}\n` } },
      ...KINDS.map((k) => buildCredentialSecret(RUNS[k].secret, { ANTHROPIC_API_KEY: "sk-ant-e2e-scripted", ANTHROPIC_BASE_URL: models[k]!.url })),
      ...KINDS.map((k) => buildAgent(RUNS[k].agent, sandbox)),
    ]);
    poolPod = (await waitForReadyPoolPod(RUNS.warm.agent)).metadata.name;
    say(`ready pool pod ${poolPod}`);
    // Made before any Run, from the operator's settings: its runtime has the endpoint, as a cold pod's has.
    const pod = await getJson<{ spec: { containers: { name: string; env?: { name: string; value?: string }[] }[] } }>(["get", "pod", poolPod, "-n", NS]);
    expect(pod.spec.containers.find((c) => c.name === "agent")?.env).toEqual(expect.arrayContaining([{ name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value: jaeger!.otlpEndpoint }]));
  }, 600_000);

  it("runs both Runs to Succeeded, the warm one from the pool, the model given the private text", async () => {
    await applyObjects(KINDS.map((k) => ({
      apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUNS[k].run, namespace: NS },
      spec: { agentRef: { name: RUNS[k].agent }, task: "Read the notes and say they are read.", credentials: [{ secretName: RUNS[k].secret, as: "env" }] },
    })));
    for (const kind of KINDS) {
      const run = await waitForPhase(RUNS[kind].run, ["Succeeded", "Failed"], 300_000) as RunObject & { status?: { startedFrom?: string } };
      expect(conditionOf(run, "Completed"), JSON.stringify(run.status)).toMatchObject({ status: "True", reason: "AgentSucceeded" });
      expect(run.status?.result?.inline).toBe(OUTPUT);
      expect(run.status?.startedFrom ?? "cold").toBe(kind === "warm" ? "pool" : "cold");
      // The private text reached the model (so its absence from the traces below means something).
      expect(JSON.stringify(models[kind]!.requests.map((r) => r.body))).toContain(SECRET);
      expect(models[kind]!.remaining()).toBe(0);
    }
  }, 600_000);

  it("finds each Run as one trace in Jaeger: invoke_agent, its chat spans and the sidecar's execute_tool spans", async () => {
    await waitFor(async () => {
      const runtime = (await jaeger!.traces("leviath-runtime")).data;
      for (const kind of KINDS) traces[kind] = traceOf(runtime, RUNS[kind].run);
      return KINDS.every((k) => isComplete(traces[k])) ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1000, description: "both Runs' traces complete in Jaeger" });
    const sidecar = (await jaeger!.traces("leviath-sidecar")).data;
    for (const kind of KINDS) {
      const { agent, run } = RUNS[kind];
      const trace = traces[kind]!;
      say(`${kind} trace ${trace.traceID}: ${trace.spans.map((s) => s.operationName).sort().join(", ")}`);
      const service = (s: JaegerSpan) => trace.processes[s.processID]?.serviceName;
      const runSpan = trace.spans.find((s) => s.operationName === `invoke_agent ${agent}`)!;
      expect(service(runSpan)).toBe("leviath-runtime");
      expect(runSpan.references).toEqual([]);
      expect(tagsOf(runSpan)).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, "leviath.run": run, "leviath.exit_code": 0 });
      const chats = trace.spans.filter((s) => s.operationName === `chat ${MODEL}`);
      const tools = trace.spans.filter((s) => s.operationName.startsWith("execute_tool "));
      expect(chats).toHaveLength(script().length);
      expect(tools.map((s) => s.operationName).sort()).toEqual(TOOLS.map((t) => `execute_tool ${t}`).sort());
      expect(trace.spans).toHaveLength(1 + chats.length + tools.length);
      for (const chat of chats) {
        expect(service(chat)).toBe("leviath-runtime");
        expect(tagsOf(chat)).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": MODEL, "span.kind": "client" });
      }
      for (const span of [...chats, ...tools]) expect(span.references).toEqual([expect.objectContaining({ refType: "CHILD_OF", traceID: trace.traceID, spanID: runSpan.spanID })]);
      for (const span of tools) expect(service(span)).toBe("leviath-sidecar");
      // No span of this Run's sidecar is in any other trace.
      const elsewhere = sidecar.filter((t) => t.traceID !== trace.traceID).flatMap((t) => t.spans).filter((s) => tagsOf(s)["leviath.run"] === run);
      expect(elsewhere).toEqual([]);
    }
  }, 180_000);

  it("puts the decision, its source, the rule, the taint, the stage, the Run and the Agent on each tool span, as the audit records them", async () => {
    for (const kind of KINDS) {
      const { agent, run } = RUNS[kind];
      const tools = new Map(traces[kind]!.spans.filter((s) => s.operationName.startsWith("execute_tool ")).map((s) => [String(tagsOf(s)["gen_ai.tool.name"]), tagsOf(s)]));
      for (const tags of tools.values()) {
        expect(tags).toMatchObject({ "gen_ai.operation.name": "execute_tool", "leviath.stage": "main", "leviath.run": run, "leviath.namespace": NS, "leviath.agent": `${NS}/${agent}` });
      }
      expect(tools.get("list_dir")).toMatchObject({ "leviath.decision": "allow", "leviath.taint.before": "public", "gen_ai.tool.call.arguments": JSON.stringify({ path: "." }) });
      expect(tools.get("web_fetch")).toMatchObject({
        "leviath.decision": "deny", "leviath.decision.source": "permission_deny", "leviath.decision.code": "permission-denied", "error.type": "permission-denied", "otel.status_code": "ERROR",
      });
      expect(tools.get("read_file")).toMatchObject({ "leviath.decision": "allow", "leviath.result.label": "private", "leviath.taint.after": "private" });
      expect(tools.get("read_file")!["gen_ai.tool.call.result"]).toBeUndefined();
      // After the private read: the copy's arguments stay off its span; the output went through the allowlist rule.
      expect(tools.get("write_file")).toMatchObject({ "leviath.decision": "allow", "leviath.taint.before": "private", "leviath.taint.after": "private" });
      expect(tools.get("write_file")!["gen_ai.tool.call.arguments"]).toBeUndefined();
      expect(tools.get("submit_output")).toMatchObject({
        "leviath.decision": "allow", "leviath.decision.source": "allowlist_rule", "leviath.rule": "allowlist[0]", "leviath.taint.before": "private",
      });
      // Each span is the audit record of its call: the same call id, tool, decision, source and taint.
      const records = parseAudit(await readAuditText(run)).map((l) => l.leviath_audit.record);
      for (const [tool, tags] of tools) {
        const record = records.filter((r) => r["call_id"] === tags["gen_ai.tool.call.id"]).at(-1);
        expect(record, `${kind} ${tool}: no audit record with call_id ${String(tags["gen_ai.tool.call.id"])}`).toMatchObject({ tool_name: tool, decision: tags["leviath.decision"], decision_source: tags["leviath.decision.source"] });
      }
    }
  }, 120_000);

  it("stores the public arguments and none of the private text, on no span, event or process of any service", async () => {
    const services = await fetch(jaeger!.queryUrl("/api/services")).then(async (r) => (await r.json()) as { data: string[] });
    expect(services.data.sort()).toEqual(["leviath-runtime", "leviath-sidecar"]);
    let stored = "";
    for (const service of services.data) stored += (await jaeger!.traces(service)).text;
    expect(stored).toContain(JSON.stringify({ path: "." }).replaceAll('"', '\\"'));
    expect(stored).not.toContain(SECRET);
  });
});
