// Issue 41 (finding 6), on the real node: the reference runtime `leviath agent` (the leviath-agent image, as the chart
// ships it) follows a sidecar restart. Its model, the scripted model server on the node's address, first asks for a
// read, then holds its next turn; meanwhile the test kills the sidecar with SIGKILL through containerd (what the
// OOM killer does) and the kubelet starts it again (a native sidecar), which writes a new runtime token to the same
// file. Only then does the model ask for submit_output: the runtime, refused with the token it read at start, reads
// the file again, reconnects, and the Run ends Succeeded with the output as its result. On b98374a it read the token
// once and every call after the restart was refused (`runtime-token-required`).
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startScriptedModelServer, type ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import { imageValues } from "./harness/kube-json.ts";
import {
  agentLog, applyObjects, cleanUp, installOperator, killContainer, NS, parseAudit, readAuditText, waitForPhase,
} from "./harness/operator-fixture.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "restart-ref-agent";
const RUN = "restart-ref-run";
const OUTPUT = "# answer\nwritten after the sidecar restarted\n";

type SidecarStatus = { restartCount: number; ready: boolean };
const sidecarStatus = async (): Promise<SidecarStatus | undefined> => {
  const r = await kubectl(["get", "pod", `${RUN}-engine`, "-n", NS, "-o", "jsonpath={.status.initContainerStatuses[?(@.name==\"sidecar\")]}"]);
  return r.stdout === "" ? undefined : (JSON.parse(r.stdout) as SidecarStatus);
};

describe("a sidecar killed mid-Run of the reference runtime, on the real node", () => {
  let model: ScriptedModelServer | undefined;
  let restarted: () => void = () => undefined;

  beforeAll(async () => {
    const agent = node.images["leviath-agent"];
    if (!agent) throw new Error("no leviath-agent image: run 'bash scripts/build-images'");
    const afterRestart = new Promise<void>((resolve) => {
      restarted = resolve;
    });
    model = await startScriptedModelServer([
      { turn: { text: "Reading first.", calls: [{ id: "call-0001", name: "read_file", args: { path: "/etc/hostname" } }] } },
      { turn: { calls: [{ id: "call-0002", name: "submit_output", args: { output: OUTPUT } }] }, after: afterRestart },
    ], node.network.gateway);
    await installOperator(node, {
      agent: { image: imageValues(agent) },
      policy: { spec: { sandbox: { kind: "container", image: node.images.sandbox, onUnavailable: "error" }, toolPermissions: { submit_output: "allow" } } },
    });
  });

  afterAll(async () => {
    restarted();
    if (model) process.stderr.write(`[e2e sidecar-restart-agent] model requests: ${model.requests.length}, steps left: ${model.remaining()}\n`);
    await kubectl(["delete", "agent", AGENT, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await kubectl(["delete", "secret", "restart-model", "-n", NS, "--ignore-not-found"], { allowFailure: true });
    await cleanUp([RUN]);
    await model?.close();
  });

  it("runs until the model holds its second turn, the runtime connected with the first token", async () => {
    const secret = await kubectl(["create", "secret", "generic", "restart-model", "-n", NS, "--from-literal=ANTHROPIC_API_KEY=sk-ant-e2e-scripted",
      `--from-literal=ANTHROPIC_BASE_URL=${model!.url}`, "--dry-run=client", "-o", "yaml"]);
    const labelled = await kubectl(["label", "--local", "-f", "-", "leviath.dev/credential=true", "-o", "yaml"], { input: secret.stdout });
    await kubectl(["apply", "-f", "-"], { input: labelled.stdout });
    await applyObjects([
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: AGENT, namespace: NS },
        spec: {
          agent: { name: AGENT, version: "1.0.0", description: "e2e sidecar restart, reference runtime" },
          sandbox: { kind: "container", image: node.images.sandbox, network: false, onUnavailable: "error" },
          stages: [{
            name: "main", availableTools: ["read_file", "submit_output"],
            runtime: { mode: "output", model: { models: [{ provider: "anthropic", model: "claude-sonnet-4-6" }] }, max_iterations: 5 },
          }],
        },
      },
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS },
        spec: { agentRef: { name: AGENT }, task: "restart", credentials: [{ secretName: "restart-model", as: "env" }] },
      },
    ]);
    // The second request: the runtime has the read's answer (over /mcp, with the token it read at start) and waits on the model.
    await waitFor(async () => (model!.requests.length >= 2 ? true : undefined), { timeoutMs: 240_000, intervalMs: 1000, description: "the runtime to ask for its second turn" });
    const reads = parseAudit(await waitFor(async () => {
      const text = await readAuditText(RUN);
      return text.includes("call-0001") || text.includes("read_file") ? text : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the read's record" })).map((l) => l.leviath_audit.record).filter((r) => r["tool_name"] === "read_file");
    expect(reads.length).toBeGreaterThan(0);
  });

  it("kills the sidecar; once the kubelet has started it again, the runtime goes on with the new token to Succeeded", async () => {
    expect((await sidecarStatus())?.restartCount).toBe(0);
    await killContainer(node, `${RUN}-engine`, "sidecar");
    await waitFor(async () => {
      const s = await sidecarStatus();
      return s !== undefined && s.restartCount === 1 && s.ready ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500, description: "the sidecar started again and ready" });
    restarted();
    const run = await waitForPhase(RUN, ["Succeeded", "Failed"], 180_000);
    if (run.status?.phase !== "Succeeded") process.stderr.write(`[e2e sidecar-restart-agent] agent log:\n${await agentLog(RUN)}\n`);
    expect(run.status?.phase).toBe("Succeeded");
    expect(run.status?.result).toMatchObject({ inline: OUTPUT });
    expect((await sidecarStatus())?.restartCount).toBe(1);
    // The submit_output the model asked for after the restart is in the Run's audit, allowed.
    const records = parseAudit(await readAuditText(RUN)).map((l) => l.leviath_audit.record);
    expect(records.filter((r) => r["tool_name"] === "submit_output" && r["decision"] === "allow").length).toBeGreaterThan(0);
    expect(records.some((r) => r["code"] === "runtime-token-required")).toBe(false);
  });
});
