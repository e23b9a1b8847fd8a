// Safe by default, on a node whose network plugin does not enforce NetworkPolicy (issue 29): this file starts its
// own control plane and a node without kube-router (beside the suite's enforcing node), installs the chart with its
// defaults for the enforcement check (verify on, onUnverified: warn, probe pods in the sandbox namespace), and
// proves what the operator says and does: its probe reports NotEnforced, a Run with a `network = false` sandbox
// starts under `warn` with NetworkIsolated False (NetworkNotEnforced), and that is true (its closed sandbox pod
// reaches the node); under `onUnverified: refuse` a new such Run does not start. The same real Run also shows what
// needs a kubelet in the Run's lifecycle (moved here from test/integration/controller/sandbox-availability.test.ts,
// which wrote pod status by hand): SandboxReady once its sandbox pods are Ready, WaitingInput while its sidecar
// reports a pending prompt, and Cancelled when cancelled: its pods deleted, the prompt settled by the stopping
// sidecar (no longer pending on the Run) and refused in the audit. Then issue 41: under a policy without the check,
// a `network = false` Run's NetworkIsolated is Unknown, not True, while its closed sandbox pod does connect out; and
// examples/policy.yaml, installed as docs/quickstart.md does (`--set-file policy.document=`), turns the check on, so
// the same Run then says False (NetworkNotEnforced).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { createTestCluster, helm, kubectl, REPO_ROOT, startControlPlane, useTestCluster, waitFor, type ControlPlane } from "../integration/harness/index.ts";
import { getJson } from "./harness/kube-json.ts";
import { installNodeLocalPath } from "./harness/local-path.ts";
import { startNode, type Node } from "./harness/node.ts";
import { listenTcp, type Listener } from "./harness/node-listeners.ts";
import {
  applyObjects, buildTwoStageAgent, cleanUp, conditionOf, getRun, installOperator, NS, parseAudit, readAuditText, RELEASE, SYSTEM_NS, waitForRunPods,
} from "./harness/operator-fixture.ts";
import { execInPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const AGENT = "open-net-agent";
const WARNED = "warned-run";
const REFUSED = "refused-run";
const UNCHECKED = "unchecked-run";
const NOT_ENFORCED = "a probe pod under a deny-all NetworkPolicy connected to another pod: the network plugin ignores NetworkPolicy";

type Enforcement = { state: string; message: string; node?: string; checkedAt?: string };

const run = (name: string) => ({
  apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name, namespace: NS },
  // The runtime's flow, then a send_email that waits for a person: the Run stays in progress while the test looks.
  spec: { agentRef: { name: AGENT }, task: "e2e", mode: "interactive", deadlines: { sandboxReadySeconds: 300 }, runtime: { e2e: { holdTool: "send_email" } } },
});

describe("network = false on a node that does not enforce NetworkPolicy, with the chart's defaults", () => {
  let controlPlane: ControlPlane | undefined;
  let node: Node | undefined;
  let tcp: Listener | undefined;

  beforeAll(async () => {
    controlPlane = await startControlPlane();
    node = await startNode(controlPlane, { networkPolicy: false, images: ["leviath-operator", "leviath-runtime", "leviath-local-path"], startTimeoutMs: 600_000 });
    useTestCluster(createTestCluster(controlPlane.kubeconfigPath, controlPlane.binDir));
    // The Runs' claims bound as on the suite's node: the provisioner, the default StorageClass.
    await installNodeLocalPath(node);
    const runtime = node.images["leviath-runtime"];
    if (!runtime) throw new Error("no leviath-runtime image: run 'bash scripts/build-images'");
    tcp = await listenTcp(node.network.gateway, "hello-from-the-node");
    // Only what the Run needs besides the chart's defaults (networkEnforcement: verify, onUnverified: warn).
    await installOperator(node, {
      controller: { runtimeImage: runtime },
      policy: { spec: { sandbox: { kind: "container", image: node.images.sandbox, onUnavailable: "error" }, toolPermissions: { shell: "allow", submit_output: "allow" } } },
    });
  }, 900_000);

  afterAll(async () => {
    if (controlPlane) await cleanUp([WARNED, REFUSED, UNCHECKED]).catch(() => undefined);
    await tcp?.close();
    await node?.stop();
    await controlPlane?.stop();
  }, 300_000);

  it("the operator's probe, on by default, finds that the node does not enforce NetworkPolicy", async () => {
    const policy = await waitFor(async () => {
      const p = await getJson<{ spec: { networkEnforcement?: unknown }; status?: { networkEnforcement?: Enforcement } }>(["get", "leviathpolicy", "cluster"]);
      return p.status?.networkEnforcement?.checkedAt ? p : undefined;
    }, { timeoutMs: 240_000, intervalMs: 1000, description: "the probe's first result" });
    expect(policy.spec.networkEnforcement).toEqual({ verify: true, namespace: NS, onUnverified: "warn" });
    expect(policy.status?.networkEnforcement).toMatchObject({ state: "NotEnforced", message: NOT_ENFORCED, node: node!.name });
  });

  it("under warn, a network = false Run starts and its NetworkIsolated condition says the policy is not enforced, which holds", async () => {
    await applyObjects([
      buildTwoStageAgent({
        name: AGENT, sandbox: node!.images.sandbox!, description: "e2e open network", toolPermissions: { shell: "allow", submit_output: "allow", send_email: "ask" },
        surveyTools: ["read_file", "shell"], digestTools: ["shell", "send_email", "submit_output"],
      }),
      run(WARNED),
    ]);
    const pods = await waitForRunPods(WARNED, 3, 300_000);
    const closed = pods.find((p) => p.metadata.labels?.["leviath.dev/network"] === "none")?.metadata.name;
    expect(closed, JSON.stringify(pods.map((p) => p.metadata))).toBeTruthy();
    const isolated = await waitFor(async () => {
      const c = conditionOf(await getRun(WARNED), "NetworkIsolated");
      return c?.reason === "NetworkNotEnforced" ? c : undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000, description: "NetworkIsolated to say NetworkNotEnforced" });
    expect(isolated.status).toBe("False");
    expect(isolated.message).toBe(`NetworkPolicy '${WARNED}-isolate' denies all ingress and egress of the sandbox pods, but the cluster does NOT enforce NetworkPolicy: ${NOT_ENFORCED}`);
    // The NetworkPolicy exists and is ignored: the closed sandbox pod reaches the node.
    await getJson(["get", "networkpolicy", `${WARNED}-isolate`, "-n", NS]);
    const r = await execInPod(NS, closed!, `if nc -w 3 ${node!.network.gateway} ${tcp!.port} </dev/null >/tmp/nc.out 2>&1; then echo connected; cat /tmp/nc.out; else echo refused; fi`);
    expect(r.stdout.trim()).toBe("connected\nhello-from-the-node");
  });

  it("runs once its sandbox pods are Ready, and waits for input while its sidecar reports a pending prompt", async () => {
    const waiting = await waitFor(async () => {
      const r = await getRun(WARNED);
      return r.status?.phase === "WaitingInput" ? r : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1000, description: "the Run to wait for input (its held send_email)" });
    expect(conditionOf(waiting, "SandboxReady")).toMatchObject({ status: "True", reason: "Ready" });
    const sandboxes = (waiting.status?.sandboxes ?? []) as { ready?: boolean; stages?: string[]; pod?: string }[];
    expect(sandboxes.map((b) => [b.stages?.join(","), b.ready]).sort()).toEqual([["digest", true], ["survey", true]]);
    const pods = (await getJson<{ items: { metadata: { name: string } }[] }>(["get", "pods", "-n", NS, "-l", `leviath.dev/run=${WARNED}`])).items.map((p) => p.metadata.name);
    for (const b of sandboxes) expect(pods).toContain(b.pod);
    expect(conditionOf(waiting, "AwaitingApproval")).toMatchObject({ status: "True", reason: "PendingApproval" });
    expect(waiting.status?.pendingApprovals).toEqual([expect.objectContaining({ tool: "send_email" })]);
  });

  it("under refuse, a new network = false Run does not start, and says why; the started one goes on", async () => {
    await kubectl(["patch", "leviathpolicy", "cluster", "--type=merge", "-p", JSON.stringify({ spec: { networkEnforcement: { onUnverified: "refuse" } } })]);
    // The controller has the new generation in force before the Run exists (else it could start under warn).
    await waitFor(async () => {
      const p = await getJson<{ metadata: { generation: number }; status?: { observedGeneration?: number } }>(["get", "leviathpolicy", "cluster"]);
      return p.status?.observedGeneration === p.metadata.generation ? true : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the controller to observe the refuse policy" });
    await applyObjects([run(REFUSED)]);
    const refused = await waitFor(async () => {
      const r = await getRun(REFUSED);
      return r.status?.phase === "Pending" && String((r.status as { message?: string }).message ?? "").includes("onUnverified is refuse") ? r : undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000, description: "the Run to wait, refused" });
    expect((refused.status as { message?: string }).message).toBe(
      "stages survey need network = false, and NetworkPolicy enforcement is not verified on this cluster "
      + `(LeviathPolicy spec.networkEnforcement.onUnverified is refuse): NotEnforced: ${NOT_ENFORCED}`,
    );
    expect((await getJson<{ items: unknown[] }>(["get", "pods", "-n", NS, "-l", `leviath.dev/run=${REFUSED}`])).items).toEqual([]);
    expect(["Running", "WaitingInput"]).toContain((await getRun(WARNED)).status?.phase);
  });

  it("stops when cancelled: Cancelled, its pods deleted, no prompt left waiting on it, the held call refused in its audit", async () => {
    const before = (await getRun(WARNED)).status?.pendingApprovals ?? [];
    expect(before).toHaveLength(1);
    await kubectl(["patch", "run", WARNED, "-n", NS, "--type=merge", "-p", JSON.stringify({ spec: { desiredState: "Cancelled" } })]);
    await waitFor(async () => ((await getRun(WARNED)).status?.phase === "Cancelled" ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 1000, description: "the Run to be cancelled" });
    await waitFor(async () => (await getJson<{ items: unknown[] }>(["get", "pods", "-n", NS, "-l", `leviath.dev/run=${WARNED}`])).items.length === 0 ? true : undefined,
      { timeoutMs: 120_000, intervalMs: 1000, description: "the Run's pods to be deleted" });
    // The stopping sidecar settled the prompt (its runtime gone, or itself stopping), reported it and flushed its
    // audit: an Approval for it now would answer nothing, and the Run does not say it waits.
    const stopped = await getRun(WARNED);
    expect(stopped.status?.pendingApprovals ?? []).toEqual([]);
    expect(conditionOf(stopped, "AwaitingApproval")).toMatchObject({ status: "False" });
    // The runtime's held call (images/runtime/runtime.mjs, holdTool): its last decision is a refusal.
    const held = parseAudit(await readAuditText(WARNED)).map((l) => l.leviath_audit.record).filter((r) => r.call_id === "hold-1" && r.decision !== undefined);
    expect(held.at(-1)).toMatchObject({ decision: "deny" });
  });

  it("under a policy without networkEnforcement, a network = false Run's NetworkIsolated is Unknown while its closed pod connects out", async () => {
    // examples/policy.yaml as b98374a had it (no networkEnforcement), installed as docs/quickstart.md does; its
    // sandbox floor an image this node has (nothing is pulled here; the admin's image wins over the Agent's).
    const example = parse(readFileSync(join(REPO_ROOT, "examples/policy.yaml"), "utf8")) as { spec: { sandbox: Record<string, unknown> } & Record<string, unknown> };
    delete example.spec["networkEnforcement"];
    example.spec.sandbox["image"] = node!.images.sandbox;
    const dir = mkdtempSync(join(tmpdir(), "leviath-e2e-policy-"));
    try {
      writeFileSync(join(dir, "policy.yaml"), stringify(example));
      await installPolicyDocument(join(dir, "policy.yaml"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await getJson<{ spec: { networkEnforcement?: unknown } }>(["get", "leviathpolicy", "cluster"])).spec.networkEnforcement).toBeUndefined();
    await applyObjects([run(UNCHECKED)]);
    const closed = await closedPodOf(UNCHECKED);
    // The probe's last verdict (NotEnforced) goes once the verifier sees the check is off: then the reason says so.
    const isolated = await waitFor(async () => {
      const c = conditionOf(await getRun(UNCHECKED), "NetworkIsolated");
      return c?.reason === "NetworkPolicyApplied" ? c : undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000, description: "the Run's NetworkIsolated condition without the check" });
    // On b98374a: True (NetworkPolicyApplied), on a node where the pod below connects out.
    expect(isolated).toMatchObject({ status: "Unknown", reason: "NetworkPolicyApplied" });
    expect(isolated.message).toMatch(/applied, enforcement not verified: not verified on this cluster/);
    expect(await connectsToNode(closed)).toBe("connected\nhello-from-the-node");
  });

  it("examples/policy.yaml as the quickstart installs it verifies enforcement: NotEnforced here, and the Run's NetworkIsolated turns False", async () => {
    const before = (await getJson<{ status?: { networkEnforcement?: Enforcement } }>(["get", "leviathpolicy", "cluster"])).status?.networkEnforcement?.checkedAt ?? "";
    await installPolicyDocument(join(REPO_ROOT, "examples/policy.yaml"));
    const policy = await waitFor(async () => {
      const p = await getJson<{ spec: { networkEnforcement?: unknown }; status?: { networkEnforcement?: Enforcement } }>(["get", "leviathpolicy", "cluster"]);
      const checked = p.status?.networkEnforcement?.checkedAt ?? "";
      return checked !== "" && checked !== before ? p : undefined;
    }, { timeoutMs: 240_000, intervalMs: 1000, description: "the probe's result under the example policy" });
    expect(policy.spec.networkEnforcement).toEqual({ verify: true, namespace: NS, onUnverified: "warn" });
    expect(policy.status?.networkEnforcement).toMatchObject({ state: "NotEnforced", message: NOT_ENFORCED });
    const isolated = await waitFor(async () => {
      const c = conditionOf(await getRun(UNCHECKED), "NetworkIsolated");
      return c?.reason === "NetworkNotEnforced" ? c : undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000, description: "NetworkIsolated to say NetworkNotEnforced" });
    expect(isolated.status).toBe("False");
  }, 420_000);

  /** `helm upgrade` with the policy document `file` (docs/quickstart.md's `--set-file policy.document=`), observed. */
  async function installPolicyDocument(file: string): Promise<void> {
    await helm(["upgrade", RELEASE, join(REPO_ROOT, "charts/leviath-operator"), "-n", SYSTEM_NS, "--reuse-values", "--set-file", `policy.document=${file}`], { timeoutMs: 120_000 });
    await waitForObservedPolicy();
  }

  /** Until the controller has the policy's last generation in force. */
  async function waitForObservedPolicy(): Promise<void> {
    await waitFor(async () => {
      const p = await getJson<{ metadata: { generation: number }; status?: { observedGeneration?: number } }>(["get", "leviathpolicy", "cluster"]);
      return p.status?.observedGeneration === p.metadata.generation ? true : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the controller to observe the policy" });
  }

  /** The Run's `network = false` sandbox pod, once its pods exist. */
  async function closedPodOf(name: string): Promise<string> {
    const pods = await waitForRunPods(name, 3, 300_000);
    const closed = pods.find((p) => p.metadata.labels?.["leviath.dev/network"] === "none")?.metadata.name;
    expect(closed, JSON.stringify(pods.map((p) => p.metadata))).toBeTruthy();
    await waitFor(async () => ((await getJson<{ status?: { phase?: string } }>(["get", "pod", closed!, "-n", NS])).status?.phase === "Running" ? true : undefined),
      { timeoutMs: 180_000, intervalMs: 1000, description: `${closed} to run` });
    return closed!;
  }

  /** What the pod's TCP connection to the node's listener got. */
  async function connectsToNode(pod: string): Promise<string> {
    const r = await execInPod(NS, pod, `if nc -w 3 ${node!.network.gateway} ${tcp!.port} </dev/null >/tmp/nc.out 2>&1; then echo connected; cat /tmp/nc.out; else echo refused; fi`);
    return r.stdout.trim();
  }
});
