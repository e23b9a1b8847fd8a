// Issue 19's resume, on the real node: a Run of the reference runtime (`leviath agent`, the chart's default runtime
// image) whose scripted model (OpenAI's Chat Completions, on the node's address) reads a file the Agent declares
// and the LeviathPolicy does not grant: refused (`not-granted`). While the model "thinks" (its next turn is held),
// the admin adds the grant to the LeviathPolicy and resumes the Run with the annotation; the controller writes the
// new snapshot, the sidecar switches to it, and the model's retry of the same read succeeds in the same agent
// process (no restart), which then submits the output. The Run ends Succeeded, with one audit trail: the refusal,
// the re-resolution and the allowed read, in order.
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startScriptedModelServer, type ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import { getJson, imageValues } from "./harness/kube-json.ts";
import {
  agentLog, applyObjects, cleanUp, getRun, installOperator, NS, parseAudit, readAuditText, sidecarAuditLines,
  waitForPhase, waitForRunPods,
} from "./harness/operator-fixture.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "resume-agent";
const RUN = "resume-run";
const FIGURES = "Q3 revenue: 42\n";
const FILE = "/data/finance/q3.md";
const TOKEN = "2026-12-01T00:00:00Z";

describe("a refused read, resumed after the admin grants it, on the real node", () => {
  let model: ScriptedModelServer | undefined;
  let release: () => void = () => undefined;
  const resumed = new Promise<void>((resolve) => { release = resolve; });

  beforeAll(async () => {
    const agent = node.images["leviath-agent"];
    if (!agent) throw new Error("no leviath-agent image: run 'bash scripts/build-images'");
    model = await startScriptedModelServer([
      { turn: { calls: [{ id: "rd-1", name: "read_file", args: { path: FILE } }] } },
      // The retry waits until the test has resumed the Run (a model that takes its time).
      { turn: { text: "Trying again.", calls: [{ id: "rd-2", name: "read_file", args: { path: FILE } }] }, after: resumed },
      { turn: { calls: [{ id: "out-1", name: "submit_output", args: { output: "Q3 figures read.\n" } }] } },
    ], node.network.gateway);
    await installOperator(node, {
      agent: { image: imageValues(agent) },
      policy: {
        spec: {
          sandbox: { kind: "container", image: node.images.sandbox, onUnavailable: "error" },
          // The gate is not what this checks: the submitted output is not held after the private read.
          security: { taintTracking: false },
          readPaths: {
            perAgent: { [`${NS}/${AGENT}`]: ["/data/team-notes"] },
            // One volume holds both directories, mounted because a grant lies in it: what a resume adds is backed.
            volumes: [{ path: "/data", volume: { configMap: { name: "resume-data", items: [{ key: "notes.md", path: "team-notes/notes.md" }, { key: "q3.md", path: "finance/q3.md" }] } } }],
          },
        },
      },
    });
  });

  afterAll(async () => {
    release();
    await kubectl(["delete", "agent", AGENT, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await kubectl(["delete", "configmap,secret", "resume-data", "resume-model", "-n", NS, "--ignore-not-found"], { allowFailure: true });
    await cleanUp([RUN]);
    await model?.close();
  });

  it("runs the Run, whose first read is refused: declared, not granted", async () => {
    await applyObjects([
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "resume-data", namespace: NS }, data: { "notes.md": "notes\n", "q3.md": FIGURES } },
      {
        apiVersion: "v1", kind: "Secret", metadata: { name: "resume-model", namespace: NS, labels: { "leviath.dev/credential": "true" } },
        stringData: { OPENAI_API_KEY: "sk-e2e-resume", OPENAI_BASE_URL: `${model!.url}/v1` },
      },
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: AGENT, namespace: NS },
        spec: {
          agent: { name: AGENT, version: "1.0.0", description: "e2e resume" },
          sandbox: { kind: "container", image: node.images.sandbox, network: false, onUnavailable: "error" },
          readPaths: { allow: ["/data/team-notes", "/data/finance"] },
          stages: [{ name: "main", availableTools: ["read_file", "submit_output"], runtime: { mode: "output", max_iterations: 5, system_prompt: "Read the Q3 figures and report." } }],
        },
      },
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS },
        spec: { agentRef: { name: AGENT }, task: "Report the Q3 figures.", credentials: [{ secretName: "resume-model", as: "env" }], runtime: { model: "openai/gpt-e2e" } },
      },
    ]);
    await waitForRunPods(RUN, 2);
    // The sidecar reported the refusal; the model's retry is waiting (its second request arrived, unanswered).
    const run = await waitFor(async () => {
      const r = await getRun(RUN);
      return (r.status?.gateDecisions?.["read_path"] ?? 0) >= 1 && model!.requests.length === 2 ? r : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1000, description: "the refused read on the Run and the model's retry waiting" });
    expect(run.status?.phase).toBe("Running");
    const refusal = JSON.stringify(model!.requests[1]!.body["messages"]);
    // Upstream's message: declared by the blueprint, not granted by the config (the policy).
    expect(refusal).toContain("matches this agent's [read_paths], but your config does not grant it");
  });

  it("resumes once the admin adds the grant: a new snapshot, and the sidecar switches to it", async () => {
    const before = await getJson<{ metadata: { generation: number } }>(["get", "leviathpolicy", "cluster"]);
    await kubectl(["patch", "leviathpolicy", "cluster", "--type", "merge", "-p",
      JSON.stringify({ spec: { readPaths: { perAgent: { [`${NS}/${AGENT}`]: ["/data/team-notes", "/data/finance"] } } } })]);
    await kubectl(["annotate", "run", RUN, "-n", NS, `leviath.dev/resume=${TOKEN}`, "--overwrite"]);
    const run = await waitFor(async () => {
      const r = await getRun(RUN);
      return r.status?.resume?.["token"] === TOKEN ? r : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the controller's answer in status.resume" });
    expect(run.status?.resume).toMatchObject({
      outcome: "Resumed", sequence: 1, snapshot: `${RUN}-policy-r01`, added: ["/data/finance"], removed: [],
      policyGeneration: before.metadata.generation + 1,
    });
    const snapshot = await kubectl(["get", "configmap", `${RUN}-policy-r01`, "-n", NS, "-o", "jsonpath={.immutable}"]);
    expect(snapshot.stdout).toBe("true");
    await waitFor(async () => (await sidecarAuditLines(RUN)).some((l) => l.includes('"decision_source":"read_path_resume"')),
      { timeoutMs: 60_000, intervalMs: 1000, description: "the sidecar's switch to the resumed snapshot" });
    release();
  });

  it("the same runtime retries the read, gets the file, submits, and the Run ends Succeeded", async () => {
    const run = await waitForPhase(RUN, ["Succeeded", "Failed"], 120_000);
    const transcript = await agentLog(RUN);
    process.stderr.write(`[e2e resume] transcript:\n${transcript}\n[e2e resume] status: ${JSON.stringify(run.status)}\n`);
    expect(run.status?.phase).toBe("Succeeded");
    expect((await kubectl(["get", "run", RUN, "-n", NS, "-o", "jsonpath={.status.result.inline}"])).stdout).toBe("Q3 figures read.\n");
    // The file's content reached the model after the resume.
    expect(model!.requests).toHaveLength(3);
    expect(JSON.stringify(model!.requests[2]!.body["messages"])).toContain("Q3 revenue: 42");
    expect(model!.requests.every((r) => r.protocol === "openai" && r.body["model"] === "gpt-e2e")).toBe(true);
    // One agent process throughout: its container never restarted, and its transcript has both reads.
    const restarts = await kubectl(["get", "pod", `${RUN}-engine`, "-n", NS, "-o", "jsonpath={.status.containerStatuses[?(@.name==\"agent\")].restartCount}"]);
    expect(restarts.stdout).toBe("0");
    const refusedAt = transcript.indexOf("← read_file refused");
    expect(refusedAt).toBeGreaterThanOrEqual(0);
    expect(transcript.indexOf("← read_file ran in the sidecar", refusedAt)).toBeGreaterThan(refusedAt);
  });

  it("keeps one audit trail across the resume: the refusal, the re-resolution, the allowed read, in order", async () => {
    const records = parseAudit(await readAuditText(RUN)).map((l) => l.leviath_audit.record);
    const at = (pred: (r: Record<string, unknown>) => boolean) => records.findIndex(pred);
    // Calls over MCP carry the sidecar's ids (`mcp-<uuid>`), so the reads are found by tool and decision.
    const refused = at((r) => r["tool_name"] === "read_file" && r["decision"] === "deny");
    const resume = at((r) => r["decision_source"] === "read_path_resume");
    const allowed = at((r) => r["tool_name"] === "read_file" && r["decision"] === "allow");
    expect(records[refused]).toMatchObject({ tool_name: "read_file", decision_source: "read_path", code: "not-granted" });
    expect(records[resume]).toMatchObject({ call_id: "resume-1", tool_name: "read_paths", decision: "resume", code: "grants-reresolved" });
    expect(records[resume]!["read_paths_resumed"]).toMatchObject({ sequence: 1, added: ["/data/finance"] });
    expect(refused).toBeGreaterThanOrEqual(0);
    expect(resume).toBeGreaterThan(refused);
    expect(allowed).toBeGreaterThan(resume);
    expect(records.some((r) => r["tool_name"] === "submit_output")).toBe(true);
    expect(stringify(records[allowed])).not.toContain(FIGURES.trim());
  });
});
