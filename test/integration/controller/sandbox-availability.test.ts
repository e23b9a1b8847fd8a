// Sandbox availability and `onUnavailable` against the real API server, for what needs no kubelet: no kubelet runs
// here, so a pod is never Ready (the deadline case asserts exactly that), and a missing runtime class is decided
// before any pod exists. What needs a running pod (SandboxReady, WaitingInput while the sidecar reports a prompt,
// Cancelled) is on the real node: test/e2e/network-not-enforced.test.ts.
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "../harness/index.ts";
import { childrenOf, conditionOf, createAgent, createRun, OURS, readCustom, waitForCustom, startTestOperator, type Custom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("sandboxes");
  const { objects } = testCluster();
  await objects.patch({ apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { sandbox: { runtimeClasses: { gvisor: "rc-missing", microvm: "rc-present" } } } }, undefined, undefined, "leviath-test", true, "application/apply-patch+yaml");
  await objects.patch({ apiVersion: "node.k8s.io/v1", kind: "RuntimeClass", metadata: { name: "rc-present" }, handler: "kata" }, undefined, undefined, "leviath-test", true, "application/apply-patch+yaml");
  op = await startTestOperator();
});

afterAll(async () => {
  await op?.stop();
  const { custom, objects } = testCluster();
  await custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  await objects.delete({ apiVersion: "node.k8s.io/v1", kind: "RuntimeClass", metadata: { name: "rc-present" } }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

const waitForRun = (name: string, check: (run: Custom) => boolean, description: string): Promise<Custom> => waitForCustom("runs", namespace, name, check, description);

const sandboxPods = async (run: string) => (await childrenOf(namespace, run)).filter((c) => /-sbx-/.test(c.ref));

describe("sandbox availability", () => {
  it("fails a Run whose sandbox is never Ready within its deadline, and deletes its pods", async () => {
    await createAgent(namespace, "boxed", { image: "r:1", sandbox: { kind: "container", image: "alpine:3" } });
    await createRun(namespace, "slow", { agentRef: { name: "boxed" }, deadlines: { sandboxReadySeconds: 3 } });
    await waitFor(async () => (await sandboxPods("slow")).length === 1, { description: "the sandbox pod" });
    const run = await waitForRun("slow", (r) => r.status?.phase === "Failed", "the Run to fail at its deadline");
    expect(conditionOf(run, "SandboxReady")).toMatchObject({ status: "False", reason: "SandboxUnavailable" });
    expect(conditionOf(run, "SandboxReady")?.message).toMatch(/^sandbox unavailable: sandbox pod 'slow-sbx-[0-9a-f]{16}' not ready within 3s$/);
    expect(run.status?.message).toBe(conditionOf(run, "SandboxReady")?.message);
    await waitFor(async () => (await childrenOf(namespace, "slow")).length === 2, { description: "every pod to be deleted" });
    expect((await childrenOf(namespace, "slow")).map((c) => c.ref)).toEqual(["ConfigMap/slow-policy", "PersistentVolumeClaim/slow-workspace"]);
  });

  it("fails a Run whose runtime class does not exist under onUnavailable=error, creating no sandbox pod", async () => {
    await createAgent(namespace, "gv-error", { image: "r:1", sandbox: { kind: "gvisor", image: "alpine:3" } });
    await createRun(namespace, "gv-error-run", { agentRef: { name: "gv-error" } });
    const run = await waitForRun("gv-error-run", (r) => r.status?.phase === "Failed", "the Run to fail");
    expect(conditionOf(run, "SandboxReady")).toMatchObject({ status: "False", reason: "SandboxUnavailable", message: "sandbox unavailable: runtime class 'rc-missing' does not exist" });
    expect(await sandboxPods("gv-error-run")).toEqual([]);
  });

  it("falls back to the engine pod under onUnavailable=warn, and lets the sidecar exec there instead", async () => {
    await createAgent(namespace, "gv-warn", { image: "r:1", sandbox: { kind: "gvisor", image: "alpine:3", network: false, onUnavailable: "warn" } });
    await createRun(namespace, "gv-warn-run", { agentRef: { name: "gv-warn" } });
    const run = await waitForRun("gv-warn-run", (r) => conditionOf(r, "SandboxReady")?.reason === "FellBackToHost", "the fallback");
    expect(run.status?.phase).toBe("Pending");
    expect(conditionOf(run, "SandboxReady")?.message).toBe("sandbox unavailable (runtime class 'rc-missing' does not exist); falling back to host execution for stages main");
    expect(conditionOf(run, "NetworkIsolated")).toMatchObject({ status: "False", reason: "FellBackToHost" });
    expect(run.status?.sandboxes).toEqual([expect.objectContaining({ fellBackToHost: true, ready: false })]);
    const children = await childrenOf(namespace, "gv-warn-run");
    expect(children.filter((c) => c.ref.startsWith("Pod/")).map((c) => c.ref)).toEqual(["Pod/gv-warn-run-engine"]);
    const role = await testCluster().objects.read({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "gv-warn-run-sidecar", namespace } }) as { rules: { resources: string[]; resourceNames?: string[] }[] };
    expect(role.rules.find((r) => r.resources.includes("pods/exec"))?.resourceNames).toEqual(["gv-warn-run-engine"]);
  });

  it("never re-resolves a started Run: deleting its pinned ConfigMap fails it and stops its pods", async () => {
    await createRun(namespace, "unpinned", { agentRef: { name: "boxed" } });
    await waitFor(async () => (await sandboxPods("unpinned")).length === 1, { description: "the sandbox pod" });
    await waitForRun("unpinned", (r) => r.status?.agent !== undefined, "the Run to pin");
    await testCluster().core.deleteNamespacedConfigMap({ name: "unpinned-policy", namespace });
    const run = await waitForRun("unpinned", (r) => r.status?.phase === "Failed", "the Run to fail");
    expect(conditionOf(run, "PolicyResolved")).toMatchObject({ status: "False", reason: "PolicySnapshotInvalid" });
    await waitFor(async () => (await childrenOf(namespace, "unpinned")).every((c) => c.ref.startsWith("PersistentVolumeClaim/")), { description: "the pods to stop" });
  });

  it("puts a microvm sandbox on the admin's existing runtime class", async () => {
    await createAgent(namespace, "vm", { image: "r:1", sandbox: { kind: "microvm", image: "alpine:3" } });
    await createRun(namespace, "vm-run", { agentRef: { name: "vm" } });
    const [pod] = await waitFor(async () => {
      const pods = await sandboxPods("vm-run");
      return pods.length === 1 ? pods : undefined;
    }, { description: "the microvm sandbox pod" });
    expect((pod!.obj as V1Pod).spec?.runtimeClassName).toBe("rc-present");
    const run = await readCustom("runs", namespace, "vm-run");
    expect(conditionOf(run, "SandboxReady")).toMatchObject({ status: "False", reason: "WaitingForPods" });
  });
});
