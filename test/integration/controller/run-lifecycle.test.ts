// How a Run ends and what it may be given, reconciled by the operator against the real API server: a whole-run
// deadline fails it with DeadlineExceeded and takes its pods; a TTL after it finished deletes it; credential
// Secrets are checked live (metadata only) and the engine pod waits, with a condition naming the Secret, until
// the Secret exists and opted in; credentials never go where the model's commands run. Phases that only a
// kubelet sets (the agent's exit) are proven on the real node (test/e2e/run-flow.test.ts).
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, waitFor } from "../harness/index.ts";
import { buildTestApproval } from "../approval-cluster.ts";
import { childrenOf, conditionOf, createAgent, createRun, isGone, readCustom, startTestOperator, TEST_RUNTIME_IMAGE, waitForCustom, type Custom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;

const SANDBOXED = { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "container", image: "debian:bookworm-slim", network: false }, stages: [{ name: "main" }] };

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("lifecycle");
  op = await startTestOperator();
  await createAgent(namespace, "boxed", SANDBOXED);
  await createAgent(namespace, "host", { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "none" }, stages: [{ name: "main" }] });
});

afterAll(async () => {
  await op?.stop();
  if (namespace) await deleteNamespace(namespace);
});

const waitForRun = (name: string, check: (run: Custom) => boolean, description: string): Promise<Custom> => waitForCustom("runs", namespace, name, check, description);
const pods = async (run: string) => (await childrenOf(namespace, run)).filter((c) => c.ref.startsWith("Pod/"));

describe("a Run's end", () => {
  it("fails with DeadlineExceeded past spec.deadlines.activeDeadlineSeconds and loses its pods, identity and NetworkPolicy", async () => {
    await createRun(namespace, "short", { agentRef: { name: "boxed" }, deadlines: { activeDeadlineSeconds: 3 } });
    await waitFor(async () => (await pods("short")).length === 2, { description: "the engine and sandbox pods" });
    const run = await waitForRun("short", (r) => r.status?.phase === "Failed", "the deadline to fail the Run");
    expect(conditionOf(run, "Completed")).toMatchObject({ status: "True", reason: "DeadlineExceeded" });
    expect(run.status?.message).toMatch(/activeDeadlineSeconds \(3s/);
    const left = await waitFor(async () => {
      const c = await childrenOf(namespace, "short");
      return c.length === 2 ? c : undefined;
    }, { description: "everything but the policy ConfigMap and the claim gone" });
    expect(left.map((c) => c.ref)).toEqual(["ConfigMap/short-policy", "PersistentVolumeClaim/short-workspace"]);
  });

  it("loses the approval reader Role and binding with its own when it ends, and the approval controller does not write them again", async () => {
    await createRun(namespace, "answered", { agentRef: { name: "boxed" }, deadlines: { activeDeadlineSeconds: 4 } });
    await waitFor(async () => (await pods("answered")).length === 2, { description: "the engine and sandbox pods" });
    await testCluster().custom.createNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "approvals", body: buildTestApproval("answered-1", "answered", "tool-call-0001", "ok") });
    const reader = await waitFor(async () => {
      const role = (await childrenOf(namespace, "answered")).find((c) => c.ref === "Role/answered-approval-reader")?.obj as { rules?: { resourceNames?: string[] }[] } | undefined;
      return role?.rules?.[0]?.resourceNames?.includes("answered-1") ? role : undefined;
    }, { description: "the approval reader Role naming the Approval" });
    expect(reader.rules).toHaveLength(1);
    await waitForRun("answered", (r) => r.status?.phase === "Failed", "the deadline to fail the Run");
    const left = await waitFor(async () => {
      const c = await childrenOf(namespace, "answered");
      return c.length === 3 ? c : undefined;
    }, { description: "everything but the ConfigMaps and the claim gone" });
    expect(left.map((c) => c.ref)).toEqual(["ConfigMap/answered-approvals", "ConfigMap/answered-policy", "PersistentVolumeClaim/answered-workspace"]);
    // A later Approval for the finished Run brings no reader back.
    await testCluster().custom.createNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "approvals", body: buildTestApproval("answered-2", "answered", "tool-call-0002", "late") });
    await waitFor(async () => {
      const a = (await testCluster().custom.getNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", namespace, plural: "approvals", name: "answered-2" })) as Custom;
      return (a.status?.conditions?.length ?? 0) > 0;
    }, { description: "the late Approval reconciled" });
    expect((await childrenOf(namespace, "answered")).map((c) => c.ref)).toEqual(left.map((c) => c.ref));
  });

  it("is deleted ttlSecondsAfterFinished after it finished, its children with it", async () => {
    await createRun(namespace, "brief", { agentRef: { name: "boxed" }, desiredState: "Cancelled", ttlSecondsAfterFinished: 2 });
    await waitForRun("brief", (r) => r.status?.phase === "Cancelled", "the Run to finish");
    await waitFor(async () => isGone(() => readCustom("runs", namespace, "brief")), { timeoutMs: 30_000, description: "the Run deleted by its TTL" });
    await waitFor(async () => (await childrenOf(namespace, "brief")).length === 0, { timeoutMs: 90_000, description: "its children collected" });
  });

  it("keeps a finished Run without a TTL", async () => {
    const run = await readCustom("runs", namespace, "short");
    expect(run.status?.phase).toBe("Failed");
  });

  it("keeps a finished Run's phase, reason and message when its pinned policy ConfigMap is deleted afterwards", async () => {
    const before = await readCustom("runs", namespace, "short");
    await kubectl(["delete", "configmap", "short-policy", "-n", namespace]);
    // Something else to reconcile it for: an annotation (a pass runs; the old code failed it as PolicySnapshotInvalid).
    await kubectl(["annotate", "run", "short", "-n", namespace, "e2e.leviath.dev/poke=1"]);
    await waitFor(async () => isGone(() => testCluster().core.readNamespacedConfigMap({ name: "short-policy", namespace })), { description: "the ConfigMap gone" });
    await new Promise((r) => setTimeout(r, 3000));
    const after = await readCustom("runs", namespace, "short");
    expect(after.status?.phase).toBe("Failed");
    expect(after.status?.message).toBe(before.status?.message);
    expect(conditionOf(after, "Completed")).toMatchObject({ status: "True", reason: "DeadlineExceeded" });
  });
});

describe("a Run's credentials", () => {
  it("waits without an engine pod, naming the missing Secret, then one not opted in, then starts with it in the agent container only", async () => {
    await createRun(namespace, "keyed", { agentRef: { name: "boxed" }, credentials: [{ secretName: "model-key" }] });
    const missing = await waitForRun("keyed", (r) => conditionOf(r, "CredentialsReady")?.reason === "SecretNotFound", "the missing Secret named");
    expect(conditionOf(missing, "CredentialsReady")!.message).toBe(`credential Secret 'model-key' not found in namespace '${namespace}'; the engine pod waits for it`);
    expect(missing.status?.phase).toBe("Pending");
    expect((await pods("keyed")).map((p) => p.ref)).toEqual([expect.stringMatching(/^Pod\/keyed-sbx-/)]);

    await kubectl(["create", "secret", "generic", "model-key", "-n", namespace, "--from-literal=MODEL_KEY=sk-1"]);
    const refused = await waitForRun("keyed", (r) => conditionOf(r, "CredentialsReady")?.reason === "SecretNotOptedIn", "the Secret refused without the label");
    expect(conditionOf(refused, "CredentialsReady")!.message).toContain('leviath.dev/credential: "true"');
    expect((await pods("keyed")).length).toBe(1);

    await kubectl(["label", "secret", "model-key", "-n", namespace, "leviath.dev/credential=true"]);
    const engine = await waitFor(async () => {
      try {
        return await testCluster().core.readNamespacedPod({ name: "keyed-engine", namespace });
      } catch {
        return undefined;
      }
    }, { timeoutMs: 30_000, description: "the engine pod once the Secret opted in" }) as V1Pod;
    expect(engine.spec?.containers[0]!.envFrom).toEqual([{ secretRef: { name: "model-key" } }]);
    expect(engine.spec?.initContainers?.[0]!.envFrom).toBeUndefined();
    const sandbox = (await pods("keyed")).find((p) => p.ref.startsWith("Pod/keyed-sbx-"))!.obj as V1Pod;
    expect(JSON.stringify(sandbox.spec)).not.toContain("model-key");
    // The status is written after the children: wait for it rather than read it the moment the pod exists.
    const ready = await waitForRun("keyed", (r) => conditionOf(r, "CredentialsReady")?.status === "True", "CredentialsReady True");
    expect(conditionOf(ready, "CredentialsReady")).toMatchObject({ status: "True", reason: "SecretsFound" });
  });

  it("fails a Run whose model commands would run beside its credentials (a stage of kind none)", async () => {
    await kubectl(["create", "secret", "generic", "host-key", "-n", namespace, "--from-literal=K=v"]);
    await kubectl(["label", "secret", "host-key", "-n", namespace, "leviath.dev/credential=true"]);
    await createRun(namespace, "host-keyed", { agentRef: { name: "host" }, credentials: [{ secretName: "host-key" }] });
    const run = await waitForRun("host-keyed", (r) => r.status?.phase === "Failed", "the Run refused");
    expect(conditionOf(run, "PolicyResolved")).toMatchObject({ status: "False", reason: "CredentialsWithHostExecution" });
    expect(await pods("host-keyed")).toEqual([]);
  });
});
