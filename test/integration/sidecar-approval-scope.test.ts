// The sidecar's reach over Approvals, as its own ServiceAccount against the real API server: its per-Run Role
// (built by the controller's buildRole) lets it list or watch no Approval, read no other Run's relay, only its own
// Run's `<run>-approvals` ConfigMap by name, where the Approval controller relays the answers bound to that Run; the
// controller's approval-reader Role lets it get exactly the Approvals so relayed, nothing else.
// An approval still works end to end with those Roles, and the approver and reason reach the audit record.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKubeClient, loadKubeConfig } from "../../src/kube/client.ts";
import { KubeApiError } from "../../src/kube/errors.ts";
import { buildChildNames } from "../../src/sandbox/names.ts";
import { createSidecarClient } from "../../src/runtime/sidecar-client.ts";
import { makeTempDir, type SidecarProcess } from "../cli/sidecar-harness.ts";
import { whoAmI } from "./admission/admission-harness.ts";
import { applySidecarIdentity, buildTestApproval as approval, createTestRun, startApprovalCluster, type ApprovalCluster } from "./approval-cluster.ts";
import { testCluster, waitFor } from "./harness/index.ts";
import { createSandboxPod, readDecisionRecords, startClusterSidecar, waitForConsumed, writeSidecarKubeconfig } from "./sidecar-fixtures.ts";

const GROUP = { group: "leviath.dev", version: "v1alpha1" };
const RUN = "scoped-run";
const OTHER = "other-run";
let cluster: ApprovalCluster | undefined;
let namespace = "";
let sc: SidecarProcess | undefined;
let root = "";
let sidecarKubeconfig = "";

beforeAll(async () => {
  cluster = await startApprovalCluster("scope");
  namespace = cluster.namespace;
  const uid = await createTestRun(namespace, RUN);
  await createTestRun(namespace, OTHER);
  await applySidecarIdentity(namespace, RUN, uid, [await createSandboxPod(namespace, RUN)]);
  root = makeTempDir("leviath-sidecar-scope-");
  sidecarKubeconfig = await writeSidecarKubeconfig(root, namespace, RUN);
}, 120_000);

afterAll(() => cluster?.stop(sc));

const denied = async (p: Promise<unknown>) => {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(KubeApiError);
  return (err as KubeApiError).code;
};

describe("the sidecar's Role and Approvals", () => {
  it("cannot list, watch or get any Approval, nor another Run's relay; it can watch its own relay by name", async () => {
    await testCluster().custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "approvals", body: approval("for-other", OTHER, "gate-x", "not yours") });
    const relay = await waitFor(async () => {
      const cms = await testCluster().core.listNamespacedConfigMap({ namespace });
      return cms.items.find((c) => c.metadata?.name === buildChildNames(OTHER).approvals);
    }, { description: "the other Run's relay" });
    expect(Object.values(relay.data ?? {}).join()).toContain("not yours");

    const client = createKubeClient(loadKubeConfig(sidecarKubeconfig));
    const approvals = `/apis/leviath.dev/v1alpha1/namespaces/${namespace}/approvals`;
    expect(await denied(client.request("GET", approvals))).toBe(403);
    expect(await denied(client.request("GET", `${approvals}/for-other`))).toBe(403);
    expect(await denied(client.request("GET", approvals, { query: { watch: "true", labelSelector: "leviath.dev/run-uid" }, timeoutMs: 5000 }))).toBe(403);
    expect(await denied(client.request("GET", `/api/v1/namespaces/${namespace}/configmaps/${buildChildNames(OTHER).approvals}`))).toBe(403);
    expect(await denied(client.request("GET", `/api/v1/namespaces/${namespace}/configmaps`))).toBe(403);
    const own = await client.request<{ items: unknown[] }>("GET", `/api/v1/namespaces/${namespace}/configmaps`, { query: { fieldSelector: `metadata.name=${buildChildNames(RUN).approvals}` } });
    expect(own.items).toEqual([]);
  });

  it("a deleted Approval leaves its Run's relay (a retracted answer never applies)", async () => {
    const { custom, core } = testCluster();
    await custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "approvals", body: approval("retracted", OTHER, "gate-y", "changed my mind") });
    const relayHolds = async (text: string) => Object.values((await core.readNamespacedConfigMap({ name: buildChildNames(OTHER).approvals, namespace })).data ?? {}).join().includes(text);
    await waitFor(async () => (await relayHolds("changed my mind")) || undefined, { description: "the answer relayed" });
    await custom.deleteNamespacedCustomObject({ ...GROUP, namespace, plural: "approvals", name: "retracted" });
    await waitFor(async () => !(await relayHolds("changed my mind")) || undefined, { description: "the answer gone from the relay" });
    expect(await relayHolds("not yours")).toBe(true);
  });

  it("may get exactly the Approvals bound to its Run that the controller relays, and still list none", async () => {
    await testCluster().custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "approvals", body: approval("mine", RUN, "gate-never", "not asked") });
    const client = createKubeClient(loadKubeConfig(sidecarKubeconfig));
    const approvals = `/apis/leviath.dev/v1alpha1/namespaces/${namespace}/approvals`;
    const mine = await waitFor(async () => client.request<{ metadata: { name: string } }>("GET", `${approvals}/mine`).catch(() => undefined), { description: "the relayed Approval readable by the sidecar" });
    expect(mine.metadata.name).toBe("mine");
    expect(await denied(client.request("GET", `${approvals}/for-other`))).toBe(403);
    expect(await denied(client.request("GET", approvals))).toBe(403);
  });

  it("an approval still works end to end with that Role: applied, consumed, approver and reason in the audit", async () => {
    const started = await startClusterSidecar(root, RUN, namespace, sidecarKubeconfig, ["--exec-wait-seconds", "2"]);
    sc = started.sc;
    const auditDir = started.auditDir;
    const client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 30_000 });
    expect(await client.callTool({ id: "r1", tool: "read_file", args: { path: "notes.md" } })).toMatchObject({ decision: "allow" });
    const readRun = async () => (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", name: RUN })) as { status?: Record<string, unknown> };
    expect(await client.callTool({ id: "s1", tool: "shell", args: { command: "true" } })).toMatchObject({ decision: "ask", approvalId: "gate-s1" });
    await waitFor(async () => ((await readRun()).status?.["pendingApprovals"] as { id: string }[] | undefined)?.[0]?.id === "gate-s1" || undefined, { description: "the prompt in the Run's status" });

    await testCluster().custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "approvals", body: approval("ok-s1", RUN, "gate-s1", "reviewed the command") });
    const done = await client.waitForCall("s1", "shell", 60);
    expect(done).toMatchObject({ decision: "allow" });
    const consumed = await waitForConsumed(namespace, "ok-s1");
    expect(consumed.message).toBe("applied: allowOnce");
    const me = await whoAmI();
    const records = readDecisionRecords(auditDir);
    expect(records.find((r) => r["call_id"] === "s1" && r["decision"] === "allow")).toMatchObject({ approved_by: me, approval_reason: "reviewed the command" });
    // The other Run's answer never reached this sidecar: its Approval stays unconsumed.
    const other = (await testCluster().custom.getNamespacedCustomObject({ ...GROUP, namespace, plural: "approvals", name: "for-other" })) as { status?: { consumed?: boolean } };
    expect(other.status?.consumed).not.toBe(true);
  });
});
