// Issue 17's "done when", on the real node: examples/ applied as docs/quickstart.md tells a user (the chart with
// `--set-file policy.document=examples/policy.yaml`, the credential Secret, then the team notes, the Agent and
// the Run), with the chart's default runtime image, the reference runtime `leviath agent` (the `agent` image of
// scripts/build-images). The one stand-in is the model: the scripted model server (Anthropic's Messages API) on
// the node's address, where the engine pod reaches it; its base URL and key come from the Run's credential Secret.
// The example Agent runs both stages: a shell listing that its `shell = "ask"` holds (the Run's AwaitingApproval
// names the prompt) until the quickstart's `kubectl leviath approve` answers it, a read of the granted team notes,
// the transition to `digest`, and submit_output, which the taint gate holds (the context is private) until a person
// answers by hand: examples/templates/approval.yaml filled in and `kubectl create`d. The Run ends Succeeded by
// itself, its result in its status, its audit readable with docs/operations.md's command after the pod ended.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startScriptedModelServer, type ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { fillApprovalTemplate, kubectl, kubectlLeviath, REPO_ROOT, waitFor } from "../integration/harness/index.ts";
import { imageValues } from "./harness/kube-json.ts";
import {
  agentLog, cleanUp, conditionOf, createWorkspaces, getRun, installOperator, NS, parseAudit, readAuditText,
  sidecarAuditLines, tagNodeImage, waitForPhase, waitForRunPods, type Workspaces,
} from "./harness/operator-fixture.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const RUN = "digest-docs";
const MODEL_KEY = "sk-ant-e2e-scripted";
const DIGEST = "# Digest\n- The docs site moves to the new theme this week.\n- The release checklist lives in docs/release.md.\n";
const NOTES = "/data/team-notes/2025-06-02-standup.md";
/** examples/policy.yaml's sandbox floor, as the kubelet resolves it. */
const EXAMPLE_SANDBOX_IMAGE = "docker.io/library/debian:bookworm-slim";
const example = (file: string) => join(REPO_ROOT, "examples", file);

describe("examples/ on the real node, with the reference runtime and a scripted model", () => {
  let model: ScriptedModelServer | undefined;
  let workspaces: Workspaces | undefined;

  beforeAll(async () => {
    const agent = node.images["leviath-agent"];
    const debian = node.images["leviath-runtime"];
    if (!agent || !debian) throw new Error("no leviath-agent/leviath-runtime image: run 'bash scripts/build-images'");
    // No registry is reachable: the example's sandbox image is Debian bookworm built here (the minbase root fs
    // of scripts/build-images, as in leviath-runtime), under the name examples/policy.yaml gives.
    await tagNodeImage(node, debian, EXAMPLE_SANDBOX_IMAGE);
    model = await startScriptedModelServer([
      { turn: { text: "Listing docs/ first.", calls: [{ id: "call-0001", name: "shell", args: { command: "ls docs" } }] } },
      { turn: { calls: [{ id: "call-0002", name: "read_file", args: { path: NOTES } }] } },
      { turn: { text: "Enough read.", calls: [{ id: "call-0003", name: "next_stage", args: { stage: "digest", reason: "notes and docs read" } }] } },
      { turn: { calls: [{ id: "call-0004", name: "submit_output", args: { output: DIGEST } }] } },
    ], node.network.gateway);
    // Pre-bound at a known host path, not the provisioner's: the shell lists docs/release.md, planted before the Run,
    // and the model's next request must carry it (the demo's e2e runs the same examples/ on the provisioner).
    workspaces = createWorkspaces("leviath-e2e-examples-");
    mkdirSync(join(workspaces.dir, "docs"));
    writeFileSync(join(workspaces.dir, "docs", "release.md"), "# Release checklist\n");
    // The chart's default runtime image is agent.image: the one built here, under its local name.
    await installOperator(node, { agent: { image: imageValues(agent) } }, ["--set-file", `policy.document=${example("policy.yaml")}`]);
  });

  afterAll(async () => {
    if (model) process.stderr.write(`[e2e examples] model requests: ${model.requests.length}, steps left: ${model.remaining()}\n`);
    await kubectl(["delete", "-f", example("team-notes.yaml"), "-f", example("agent.yaml"), "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await kubectl(["delete", "secret", "model-provider", "-n", NS, "--ignore-not-found"], { allowFailure: true });
    await cleanUp([RUN], workspaces);
    await model?.close();
  });

  it("applies the quickstart's credential Secret and examples/ and the Run's pods run the agent image", async () => {
    // docs/quickstart.md's pipeline: the Secret, labelled as a credential, with the key and the base URL.
    const secret = await kubectl(["create", "secret", "generic", "model-provider", "-n", NS, `--from-literal=ANTHROPIC_API_KEY=${MODEL_KEY}`,
      `--from-literal=ANTHROPIC_BASE_URL=${model!.url}`, "--dry-run=client", "-o", "yaml"]);
    const labelled = await kubectl(["label", "--local", "-f", "-", "leviath.dev/credential=true", "-o", "yaml"], { input: secret.stdout });
    await kubectl(["apply", "-f", "-"], { input: labelled.stdout });
    await kubectl(["apply", "-f", "-"], { input: stringify(workspaces!.volume(RUN)) });
    await kubectl(["apply", "-f", example("team-notes.yaml"), "-f", example("agent.yaml"), "-f", example("run.yaml")]);
    const pods = await waitForRunPods(RUN, 2);
    const engine = pods.find((p) => p.metadata.name === `${RUN}-engine`);
    expect(engine).toBeDefined();
    const image = await kubectl(["get", "pod", `${RUN}-engine`, "-n", NS, "-o", "jsonpath={.spec.containers[?(@.name==\"agent\")].image}"]);
    expect(image.stdout).toBe(node.images["leviath-agent"]);
  });

  it("holds the shell call until the quickstart's kubectl leviath approve answers it, then the taint gate until the Approval template does", async () => {
    const pending = (kind: string, tool: string) => waitFor(async () => (await getRun(RUN)).status?.pendingApprovals?.find((p) => p.kind === kind && p.tool === tool),
      { timeoutMs: 120_000, intervalMs: 1000, description: `the ${kind} prompt of ${tool} on the Run` });
    const prompt = await pending("tool_approval", "shell");
    // The sidecar names a call over MCP `mcp-<uuid>`; the prompt carries what the call acts on.
    expect(prompt.id).toMatch(/^tool-mcp-[0-9a-f-]{36}$/);
    expect(prompt.target).toBe("ls docs");
    const awaiting = await waitFor(async () => {
      const c = conditionOf(await getRun(RUN), "AwaitingApproval");
      return c?.status === "True" ? c : undefined;
    }, { timeoutMs: 30_000, description: "AwaitingApproval on the Run" });
    expect(awaiting.message).toBe(`prompt '${prompt.id}' (shell "ls docs", stage survey) waits; answer with 'kubectl leviath approve ${RUN} ${prompt.id} --once' (or --deny)`);
    // docs/quickstart.md's command as written there (one prompt waits, so it needs no id).
    const approved = await kubectlLeviath(["approve", RUN, "--once", "--reason", "a listing of docs/ is fine", "-n", NS], { timeoutMs: 90_000 });
    expect(approved.stdout).toMatch(new RegExp(`^approval\\.leviath\\.dev/${RUN}-[a-z0-9]{5} created: allowOnce for prompt '${prompt.id}' of run '${RUN}'\\napplied: allowOnce\\n$`));
    const gate = await pending("taint_gate", "submit_output");
    const approval = fillApprovalTemplate({ run: RUN, promptId: gate.id, reason: "the digest may leave" });
    expect((await kubectl(["create", "-f", "-"], { input: approval })).stdout).toMatch(new RegExp(`^approval\\.leviath\\.dev/${RUN}-\\S+ created`));
  });

  it("ends Succeeded by itself with the digest as its result, after both stages ran against the model", async () => {
    const run = await waitForPhase(RUN, ["Succeeded", "Failed"], 180_000);
    const transcript = await agentLog(RUN);
    process.stderr.write(`[e2e examples] transcript:\n${transcript}\n[e2e examples] status: ${JSON.stringify(run.status)}\n`);
    expect(run.status?.phase).toBe("Succeeded");
    // What a user waiting with the plugin gets: status 0, and the phase with its message.
    const waited = await kubectlLeviath(["wait", RUN, "-n", NS], { allowFailure: true });
    expect(waited.exitCode, waited.stderr).toBe(0);
    expect(waited.stdout).toMatch(new RegExp(`^run\\.leviath\\.dev/${RUN} Succeeded: `));
    expect(run.status?.agentExit).toMatchObject({ exitCode: 0 });
    expect(conditionOf(run, "Completed")).toMatchObject({ status: "True", reason: "AgentSucceeded" });
    expect((await kubectl(["get", "run", RUN, "-n", NS, "-o", "jsonpath={.status.result.inline}"])).stdout).toBe(DIGEST);
    expect(run.status?.taint?.level).toBe("private");
    // The gate's block of submit_output, then the person's allow-once of it (the shell's tool approval is not a gate decision).
    expect(run.status?.gateDecisions).toMatchObject({ auto_block: 1, user_allow_once: 1 });
    // The model got what the blueprint says, in order, with the Secret's key.
    const reqs = model!.requests;
    expect(reqs).toHaveLength(4);
    expect(model!.remaining()).toBe(0);
    for (const r of reqs) {
      expect(r.protocol).toBe("anthropic");
      expect(r.headers["x-api-key"]).toBe(MODEL_KEY);
      expect(r.body["model"]).toBe("claude-sonnet-4-6");
    }
    const system = (i: number) => JSON.stringify(reqs[i]!.body["system"]);
    const tools = (i: number) => (reqs[i]!.body["tools"] as { name: string }[]).map((t) => t.name).sort();
    expect(system(0)).toContain("Look through the notes and docs the task points at.");
    expect(tools(0)).toEqual(["list_dir", "next_stage", "read_file", "shell"]);
    expect(JSON.stringify(reqs[0]!.body["messages"])).toContain("Summarise docs/ and the team notes into a one-page digest.");
    // What the tools gave back reached the model: the listing of docs/ (run in the sandbox pod) and the notes.
    expect(JSON.stringify(reqs[1]!.body["messages"])).toContain("release.md");
    expect(JSON.stringify(reqs[2]!.body["messages"])).toContain("The docs site moves to the new theme this week.");
    expect(system(3)).toContain("Write the digest and submit it.");
    expect(tools(3)).toContain("submit_output");
    // The transcript tells the story without the files' contents at info level.
    expect(transcript).toContain("stage 'survey'");
    expect(transcript).toContain("transition survey → digest");
    expect(transcript).toContain("output submitted in stage 'digest'");
    expect(transcript).not.toContain("The docs site moves to the new theme this week.");
  });

  it("keeps its audit readable after the pod ended: the approvals, the read and every call", async () => {
    const text = await readAuditText(RUN);
    const parsed = parseAudit(text);
    const records = parsed.map((l) => l.leviath_audit.record);
    expect(parsed.every((l) => l.leviath_audit.run === RUN)).toBe(true);
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "shell", decision: "allow", approval_reason: "a listing of docs/ is fine" }));
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "read_file", decision: "allow" }));
    expect(records).toContainEqual(expect.objectContaining({ tool_name: "submit_output", allowed: true, decision_source: "UserAllowOnce" }));
    expect([...new Set(parsed.map((l) => l.leviath_audit.file))]).toEqual(expect.arrayContaining(["stages/0/decisions.jsonl", "stages/1/decisions.jsonl"]));
    expect(await sidecarAuditLines(RUN)).toEqual(text.split("\n").filter((l) => l.startsWith("{")));
  });
});
