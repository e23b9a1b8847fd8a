// The NetworkPolicy enforcement probe against the real API server with no node: the probe pods are admitted
// under Pod Security `restricted` and never run, so enforcement stays Unknown, the LeviathPolicy's status and
// the metrics say so, and `onUnverified: refuse` keeps a `network = false` Run from starting (while `warn`
// lets it start with a NetworkIsolated condition that says enforcement is not verified). The Verified case
// needs pods that run: test/e2e/network-policy.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROBE_LABEL } from "../../../src/sandbox/network-probe.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "../harness/index.ts";
import { childrenOf, conditionOf, createAgent, createRun, OURS, waitForCustom, startTestOperator, type Custom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;

async function setPolicy(networkEnforcement: Record<string, unknown>): Promise<void> {
  const body = { apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { networkEnforcement } };
  await testCluster().objects.patch(body, undefined, undefined, "leviath-test", true, "application/apply-patch+yaml");
}

async function policyStatus(): Promise<Custom["status"]> {
  return ((await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom).status;
}

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("netprobe");
  await setPolicy({ verify: true, namespace, probeTimeoutSeconds: 5, onUnverified: "refuse" });
  op = await startTestOperator();
});

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

describe("the NetworkPolicy enforcement probe on a cluster where no pod runs", () => {
  it("creates its server pod (admitted under restricted), times out, reports Unknown and deletes what it made", async () => {
    const { core } = testCluster();
    const server = await waitFor(async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: PROBE_LABEL });
      return pods.items.find((p) => p.metadata?.name?.endsWith("-server"));
    }, { timeoutMs: 30_000, intervalMs: 200, description: "the probe server pod" });
    expect(server.spec?.containers[0]?.image).toBe("registry.example/leviath:test");
    // Owned by the policy (a cluster-scoped owner of a namespaced object), so the garbage collector removes what
    // a controller stopped mid-probe could not (see the last test).
    const policyUid = ((await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom).metadata?.uid;
    expect(server.metadata?.ownerReferences).toEqual([{ apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", name: "cluster", uid: policyUid }]);
    const status = await waitFor(async () => {
      const s = await policyStatus();
      return (s?.networkEnforcement as { state?: string } | undefined)?.state === "Unknown" && (s?.networkEnforcement as { checkedAt?: string }).checkedAt ? s : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: "the policy's networkEnforcement status" });
    expect((status!.networkEnforcement as { message: string }).message).toMatch(/^the probe server pod '.+-server' did not run within 5s/);
    await waitFor(async () => (await core.listNamespacedPod({ namespace, labelSelector: PROBE_LABEL })).items.length === 0 ? true : undefined,
      { timeoutMs: 30_000, intervalMs: 500, description: "the probe pods to be deleted" });
    const metrics = await op.operator.metrics.registry.metrics();
    expect(metrics).toMatch(/^leviath_network_probes_total\{result="Unknown"\} [1-9]/m);
    expect(metrics).toMatch(/^leviath_network_enforcement\{state="Unknown"\} 1$/m);
    expect(metrics).toMatch(/^leviath_network_enforcement\{state="Verified"\} 0$/m);
  });

  it("refuses to start a network = false Run while enforcement is not verified, and names why", async () => {
    await createAgent(namespace, "closed", { image: "r:1", sandbox: { kind: "container", image: "alpine:3", network: false } });
    await createRun(namespace, "refused", { agentRef: { name: "closed" } });
    const run = await waitForCustom("runs", namespace, "refused", (r) => r.status?.message !== undefined && String(r.status.message).includes("not verified"), "the Run to be refused");
    expect(run.status?.phase).toBe("Pending");
    expect(String(run.status?.message)).toMatch(/^stages \S+ need network = false, and NetworkPolicy enforcement is not verified on this cluster \(LeviathPolicy spec.networkEnforcement.onUnverified is refuse\): Unknown: /);
    expect((await childrenOf(namespace, "refused")).filter((c) => c.ref.startsWith("Pod/"))).toEqual([]);
  });

  it("with onUnverified: warn, starts it and says in NetworkIsolated that enforcement is not verified", async () => {
    await setPolicy({ verify: true, namespace, probeTimeoutSeconds: 5, onUnverified: "warn" });
    const run = await waitForCustom("runs", namespace, "refused", (r) => conditionOf(r, "NetworkIsolated") !== undefined, "the Run to start");
    expect(conditionOf(run, "NetworkIsolated")).toMatchObject({ status: "Unknown", reason: "NetworkPolicyApplied" });
    expect(conditionOf(run, "NetworkIsolated")?.message).toMatch(/applied, enforcement not verified: /);
    expect((await childrenOf(namespace, "refused")).some((c) => c.ref.startsWith("Pod/refused-sbx-"))).toBe(true);
  });

  it("re-creates a NetworkPolicy deleted mid-Run and says so in NetworkIsolated, once", async () => {
    const { objects } = testCluster();
    const ref = { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: "refused-isolate", namespace } };
    const before = await objects.read(ref);
    await objects.delete(ref);
    const after = await waitFor(async () => {
      const np = await objects.read(ref).catch(() => undefined);
      return np && np.metadata?.uid !== before.metadata?.uid ? np : undefined;
    }, { timeoutMs: 30_000, intervalMs: 200, description: "the NetworkPolicy re-created" });
    expect(after.metadata?.uid).not.toBe(before.metadata?.uid);
    const run = await waitForCustom("runs", namespace, "refused", (r) => conditionOf(r, "NetworkIsolated")?.reason === "NetworkPolicyRestored", "NetworkIsolated to say it was restored");
    expect(conditionOf(run, "NetworkIsolated")).toMatchObject({ status: "Unknown" });
    expect(conditionOf(run, "NetworkIsolated")?.message).toMatch(/^NetworkPolicy 'refused-isolate' was missing and was re-created at \d{4}-\d\d-\d\dT[\d:]+Z \(the sandbox pods were not isolated in between\); applied, enforcement not verified: /);
  });

  it("leaves nothing behind with the policy: a probe still waiting is removed by the garbage collector", async () => {
    const { core } = testCluster();
    // A probe that would wait ten minutes for its server: only the garbage collector can remove it within the bound.
    await setPolicy({ verify: true, namespace, probeTimeoutSeconds: 600, onUnverified: "refuse" });
    const server = await waitFor(async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: PROBE_LABEL });
      return pods.items.find((p) => p.metadata?.name?.endsWith("-server"));
    }, { timeoutMs: 30_000, intervalMs: 200, description: "the long probe's server pod" });
    await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" });
    await waitFor(async () => (await core.listNamespacedPod({ namespace, labelSelector: PROBE_LABEL })).items.length === 0 ? true : undefined,
      { timeoutMs: 60_000, intervalMs: 500, description: `the probe pod '${server.metadata?.name}' to go with the policy` });
  });
});
