// Issue 29's restart, on the real node: a Run of the scripted runtime makes a refused read and submits its output,
// then waits; the test kills the sidecar container with SIGKILL through containerd (what the kernel's OOM killer
// does), the kubelet starts it again (a native sidecar), and the runtime goes on with the new start to the end.
// Afterwards every audit record stored before the kill is still in the Run's audit ConfigMaps, in order, followed by
// the new start's; the result is on the Run, and the restarted sidecar served it to the runtime.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import {
  applyObjects, cleanUp, getRun, installOperator, killContainer, NS, parseAudit, readAuditText, runtimeLines,
  waitForPhase,
} from "./harness/operator-fixture.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "restart-agent";
const RUN = "restart-run";
const OUTPUT = "# answer\nkept across a restart\n";

const callIdsOf = (text: string) => parseAudit(text).map((l) => l.leviath_audit.record["call_id"]);
const sidecarRestarts = async () =>
  Number((await kubectl(["get", "pod", `${RUN}-engine`, "-n", NS, "-o", "jsonpath={.status.initContainerStatuses[?(@.name==\"sidecar\")].restartCount}"])).stdout || "0");

describe("a sidecar killed mid-Run on the real node", () => {
  const runtime = node.images["leviath-runtime"];
  let before = "";

  beforeAll(async () => {
    if (!runtime) throw new Error("no leviath-runtime image: run 'bash scripts/build-images'");
    await installOperator(node, {
      controller: { runtimeImage: runtime },
      policy: { spec: { sandbox: { kind: "container", image: node.images.sandbox, onUnavailable: "error" }, toolPermissions: { submit_output: "allow" } } },
    });
  });

  afterAll(async () => {
    await kubectl(["delete", "agent", AGENT, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await cleanUp([RUN]);
  });

  it("runs until the runtime waits, its records stored and its result on the Run", async () => {
    await applyObjects([
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: AGENT, namespace: NS },
        spec: {
          agent: { name: AGENT, version: "1.0.0", description: "e2e sidecar restart" },
          sandbox: { kind: "container", image: node.images.sandbox, network: false, onUnavailable: "error" },
          stages: [{ name: "main", availableTools: ["read_file", "submit_output"], runtime: { mode: "output" } }],
        },
      },
      { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS }, spec: { agentRef: { name: AGENT }, task: "restart", runtime: { e2e: { scenario: "restart" } } } },
    ]);
    await waitFor(async () => (await runtimeLines(RUN)).some((l) => l.step === "waiting-for-restart"),
      { timeoutMs: 180_000, intervalMs: 1000, description: "the runtime waiting after its submit_output" });
    expect((await getRun(RUN)).status?.result).toMatchObject({ inline: OUTPUT, callId: "out-1" });
    before = await waitFor(async () => {
      const text = await readAuditText(RUN);
      return ["rd-1", "out-1"].every((id) => callIdsOf(text).includes(id)) ? text : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "the records of rd-1 and out-1 in the audit ConfigMaps" });
  });

  it("kills the sidecar with SIGKILL; the kubelet starts it again, and it serves the runtime the stored result", async () => {
    expect(await sidecarRestarts()).toBe(0);
    await killContainer(node, `${RUN}-engine`, "sidecar");
    const run = await waitForPhase(RUN, ["Succeeded", "Failed"], 180_000);
    const lines = await runtimeLines(RUN);
    process.stderr.write(`[e2e sidecar-restart] runtime:\n${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    expect(run.status?.phase).toBe("Succeeded");
    expect(await sidecarRestarts()).toBe(1);
    const state = lines.find((l) => l.step === "state");
    expect(state?.status).toBe(200);
    expect(state?.body["result"]).toMatchObject({ inline: OUTPUT, callId: "out-1" });
    expect(lines.find((l) => l.step === "read-refused-again")?.body).toMatchObject({ decision: "deny" });
  });

  it("keeps every audit record stored before the kill, in order, then the new start's, and the result", async () => {
    const after = await readAuditText(RUN);
    expect(after.startsWith(before)).toBe(true);
    const ids = callIdsOf(after);
    expect(ids.indexOf("rd-1")).toBeLessThan(ids.indexOf("out-1"));
    expect(ids.indexOf("out-1")).toBeLessThan(ids.indexOf("rd-2"));
    expect((await getRun(RUN)).status?.result).toMatchObject({ inline: OUTPUT, callId: "out-1" });
  });
});
