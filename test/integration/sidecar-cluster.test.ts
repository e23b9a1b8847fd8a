// The sidecar in cluster mode against the real API server: it reports its part of the Run's status, applies
// Approval resources to its pending prompts (only those the controller bound to its Run's uid; who approved and
// why land in the audit record of the decision), marks them consumed, and shells into the stage's sandbox
// pod with pods/exec. Pods never run here (there is no kubelet), so the exec waits for the sandbox container
// (--exec-wait-seconds) and then fails naming the pod and container, and the test checks that this reaches the
// runtime as an error result, never a hang or an allow without a run. A prompt whose MCP client gave up is
// withdrawn: the Approval given afterwards is consumed as `approval-withdrawn` and runs nothing.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSidecarClient } from "../../src/runtime/sidecar-client.ts";
import { makeTempDir, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "./harness/index.ts";
import { installApprovalPolicies, whoAmI } from "./admission/admission-harness.ts";
import { startTestOperator, type TestOperator } from "./controller/operator-harness.ts";
import { createSandboxPod, readDecisionRecords, startClusterSidecar, waitForConsumed } from "./sidecar-fixtures.ts";

const GROUP = { group: "leviath.dev", version: "v1alpha1" };
const RUN = "sidecar-run";
let namespace = "";
let sc: SidecarProcess;
let op: TestOperator;
let policies: { remove(): Promise<void> } | undefined;
let auditDir = "";

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("sidecar");
  policies = await installApprovalPolicies();
  // The controller binds Approvals to the Run's uid; the sidecar only sees bound ones.
  op = await startTestOperator();
  const { custom, kubeconfigPath } = testCluster();
  await custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN }, spec: { agentRef: { name: "agent" } } } });
  await createSandboxPod(namespace, RUN);
  ({ sc, auditDir } = await startClusterSidecar(makeTempDir("leviath-sidecar-cluster-"), RUN, namespace, kubeconfigPath, ["--exec-wait-seconds", "2"]));
}, 120_000);

afterAll(async () => {
  if (sc) expect(await sc.stop()).toBe(0);
  await op?.stop();
  await policies?.remove();
  if (namespace) await deleteNamespace(namespace);
});

describe("a cluster sidecar stopped while its sandbox pod never runs", () => {
  // A Run cancelled before its sandbox pod runs: the shell channel's opening waits for the pod (up to the default
  // --exec-wait-seconds, 300 s), and that wait must not hold the stopping sidecar until the kubelet's SIGKILL.
  it("exits 0 at SIGTERM, without waiting out the channel's wait for the pod", async () => {
    const run = "never-runs";
    await testCluster().custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: run }, spec: { agentRef: { name: "agent" } } } });
    await createSandboxPod(namespace, run);
    const { sc: stopping } = await startClusterSidecar(makeTempDir("leviath-sidecar-stop-"), run, namespace, testCluster().kubeconfigPath);
    expect(await stopping.stop()).toBe(0);
  }, 60_000);
});

const readRun = async () => (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: RUN })) as { status?: Record<string, unknown> };

describe("leviath sidecar in a cluster", () => {
  it("reports the prompt in the Run's status, applies the Approval, and reports a failed pods/exec as an error result", async () => {
    const client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 30_000 });
    expect(await client.callTool({ id: "r1", tool: "read_file", args: { path: "notes.md" } })).toMatchObject({ decision: "allow", label: "internal" });
    expect(await client.callTool({ id: "s1", tool: "shell", args: { command: "id" } })).toMatchObject({ decision: "ask", approvalId: "gate-s1" });
    const local = await fetch(`${sc.url}/v1/approvals/gate-s1`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ decision: "allowOnce" }) });
    expect(local.status).toBe(403);

    const pending = await waitFor(async () => {
      const status = (await readRun()).status;
      const list = status?.["pendingApprovals"] as { id: string }[] | undefined;
      return list?.[0]?.id === "gate-s1" ? status : undefined;
    }, { description: "the prompt in the Run's status" });
    expect(pending).toMatchObject({ stage: "main", taint: { tracking: true, level: "internal" }, pendingApprovals: [{ id: "gate-s1", kind: "taint_gate", tool: "shell", stage: "main" }] });

    await testCluster().custom.createNamespacedCustomObject({
      ...GROUP, namespace, plural: "approvals",
      body: { apiVersion: "leviath.dev/v1alpha1", kind: "Approval", metadata: { name: "ok-s1" }, spec: { runRef: { name: RUN }, approvalId: "gate-s1", decision: "allowOnce", reason: "reviewed the command", approvedBy: "mallory" } },
    });
    const done = await client.waitForCall("s1", "shell", 60);
    expect(done).toMatchObject({ decision: "allow", isError: true });
    expect(done.decision === "allow" && done.result).toMatch(/^\[error\] pods\/exec into pod\/sidecar-run-sbx-[0-9a-f]{16} failed: container 'sandbox' of pod '[^']+\/sidecar-run-sbx-[0-9a-f]{16}' is not running after 2 s \(Pending, not scheduled to a node yet\)$/);

    const approval = await waitForConsumed(namespace, "ok-s1");
    expect(approval.message).toBe("applied: allowOnce");
    // Who approved comes from the admission request (the forged 'mallory' is replaced), and reaches the audit.
    const me = await whoAmI();
    const records = readDecisionRecords(auditDir);
    expect(records.find((r) => r["call_id"] === "s1" && r["decision"] === "allow")).toMatchObject({ approved_by: me, approval_reason: "reviewed the command" });

    const after = await waitFor(async () => {
      const status = (await readRun()).status;
      return (status?.["pendingApprovals"] as unknown[] | undefined)?.length === 0 ? status : undefined;
    }, { description: "the prompt gone from the Run's status" });
    expect(after["gateDecisions"]).toMatchObject({ auto_allow: 1, auto_block: 1, user_allow_once: 1 });
  });

  it("withdraws the prompt of an MCP call whose client cancelled: the Approval given afterwards is consumed as approval-withdrawn", async () => {
    const client = new Client({ name: "leviath-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${sc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${sc.runtimeToken}` } } }));
    const abort = new AbortController();
    const call = client.callTool({ name: "shell", arguments: { command: "id -u" } }, undefined, { signal: abort.signal });
    type Prompt = { id: string; tool: string };
    const prompt = await waitFor(async () => ((await readRun()).status?.["pendingApprovals"] as Prompt[] | undefined)?.find((p) => p.tool === "shell"), { description: "the MCP call's prompt in the Run's status" });
    abort.abort();
    await expect(call).rejects.toThrow();
    await client.close();
    await waitFor(async () => (((await readRun()).status?.["pendingApprovals"] as Prompt[] | undefined)?.some((p) => p.id === prompt.id) === false ? true : undefined), { description: "the withdrawn prompt gone from the Run's status" });
    await testCluster().custom.createNamespacedCustomObject({
      ...GROUP, namespace, plural: "approvals",
      body: { apiVersion: "leviath.dev/v1alpha1", kind: "Approval", metadata: { name: "too-late" }, spec: { runRef: { name: RUN }, approvalId: prompt.id, decision: "allowOnce" } },
    });
    const approval = await waitForConsumed(namespace, "too-late");
    expect(approval.message).toBe(`approval-withdrawn: prompt '${prompt.id}' was withdrawn: the client of its call gave up waiting, so the call was refused and will never run`);
    // The status names no call id: the withdrawal's record names the prompt, and through its call id the whole call.
    const withdrawal = readDecisionRecords(auditDir).find((r) => r["withdrawn_approval_id"] === prompt.id);
    const records = readDecisionRecords(auditDir).filter((r) => r["call_id"] === withdrawal?.["call_id"]);
    expect(records.map((r) => [r["tool_name"], r["decision"], r["decision_source"], r["code"], r["gave_up"]])).toEqual([["shell", "ask", "auto_block", undefined, undefined], ["shell", "deny", "client_gave_up", "client-gave-up", "cancelled"]]);
  });
});
