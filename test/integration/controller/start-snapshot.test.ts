// The start snapshot `<run>-policy` is checked by content and digest, not trusted on its owner reference alone
// (src/controller/run/start-snapshot.ts), against the real API server. The adversary is another user of the
// namespace who may create and delete ConfigMaps (not the Run's status): they plant a `<run>-policy` with an owner
// reference to the Run before the controller writes it, or delete the immutable one and recreate it with a wider
// grant. Either way the Run fails with PolicySnapshotInvalid and none of its pods run; an untouched Run records
// the digest of the ConfigMap it was pinned to.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { computeSnapshotDataSha256 } from "../../../src/io/snapshot-digest.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster } from "../harness/index.ts";
import { applyPolicy, conditionOf, createAgent, createRun, isGone, OURS, patchCustom, startTestOperator, TEST_RUNTIME_IMAGE, waitForCustom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator | undefined;

const AGENT = { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "none" }, stages: [{ name: "main" }], readPaths: { allow: ["/data/shared"] } };
const configMap = (name: string) => testCluster().core.readNamespacedConfigMap({ name, namespace });
const failedOnSnapshot = (run: string) => waitForCustom("runs", namespace, run, (r) => r.status?.phase === "Failed" && conditionOf(r, "PolicyResolved")?.reason === "PolicySnapshotInvalid", `${run} failed on its snapshot`);

/** A ConfigMap named like the run's snapshot, owned by the Run as its controller, with a run policy that grants `/`. */
function planted(run: { name: string; uid: string }, data: Record<string, string>): V1ConfigMap {
  return {
    metadata: { name: `${run.name}-policy`, namespace, labels: { "leviath.dev/run": run.name }, ownerReferences: [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: run.name, uid: run.uid, controller: true, blockOwnerDeletion: true }] },
    immutable: true,
    data,
  };
}

function widened(data: Record<string, string>): Record<string, string> {
  const policy = JSON.parse(data["run-policy.json"]!) as { readPaths: { granted: string[]; declared: string[] } };
  policy.readPaths.granted = ["/"];
  policy.readPaths.declared = ["/"];
  return { ...data, "run-policy.json": `${JSON.stringify(policy, null, 2)}\n` };
}

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("start-snapshot");
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  await applyPolicy({ readPaths: { global: ["/data/shared"] } });
  await createAgent(namespace, "reader", AGENT);
}, 120_000);

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

describe("the start snapshot is checked by content and digest", { timeout: 240_000 }, () => {
  it("refuses a <run>-policy planted, owner reference and all, before the controller wrote its own", async () => {
    // The operator is not running yet: the planted ConfigMap is there first.
    const run = await createRun(namespace, "planted", { agentRef: { name: "reader" } });
    const uid = run.metadata!.uid!;
    const data = { "run-policy.json": "{}\n", "runtime.json": "{}\n", "controller.json": "{}\n" };
    await testCluster().core.createNamespacedConfigMap({ namespace, body: planted({ name: "planted", uid }, data) });
    op = await startTestOperator();
    const failed = await failedOnSnapshot("planted");
    expect(conditionOf(failed, "PolicyResolved")?.message).toBe("ConfigMap 'planted-policy' exists and is not the snapshot this Run resolved; it was not written by the controller (delete it and the Run to start again)");
    expect(await isGone(() => testCluster().core.readNamespacedPod({ name: "planted-engine", namespace }))).toBe(true);
    // The pod's ServiceAccount went out beside the snapshot's write (no pod before both): refused, it goes too.
    expect(await isGone(() => testCluster().core.readNamespacedServiceAccount({ name: "planted-sidecar", namespace }))).toBe(true);
  });

  it("records the digest of the snapshot it pinned, and fails the Run when the snapshot is replaced by a wider one", async () => {
    op ??= await startTestOperator();
    const run = await createRun(namespace, "swapped", { agentRef: { name: "reader" } });
    const pinned = await waitForCustom("runs", namespace, "swapped", (r) => typeof r.status?.["snapshotSha256"] === "string", "the snapshot digest recorded");
    const original = (await configMap("swapped-policy")).data!;
    expect(pinned.status?.["snapshotSha256"]).toBe(computeSnapshotDataSha256(original));
    await waitForCustom("runs", namespace, "swapped", () => true, "the run");
    expect(await isGone(() => testCluster().core.readNamespacedPod({ name: "swapped-engine", namespace }))).toBe(false);
    // The namespace editor: immutable, so delete it and create the wider one under the same name and owner. The
    // controller is stopped meanwhile: a pass between the two requests would fail the Run on the missing ConfigMap
    // (also PolicySnapshotInvalid, with no pod), and this test is about the replaced one.
    await op.stop();
    await testCluster().core.deleteNamespacedConfigMap({ name: "swapped-policy", namespace });
    await testCluster().core.createNamespacedConfigMap({ namespace, body: planted({ name: "swapped", uid: run.metadata!.uid! }, widened(original)) });
    op = await startTestOperator();
    await patchCustom("runs", namespace, "swapped", { metadata: { annotations: { "test/poke": "1" } } });
    const failed = await failedOnSnapshot("swapped");
    expect(conditionOf(failed, "PolicyResolved")?.message).toBe("ConfigMap 'swapped-policy' no longer holds the snapshot pinned at start (its SHA-256 is not status.snapshotSha256); a started Run is never resolved again");
    expect(failed.status?.["snapshotSha256"]).toBe(computeSnapshotDataSha256(original));
    await waitForCustom("runs", namespace, "swapped", () => true, "the run");
    const deadline = Date.now() + 60_000;
    while (!(await isGone(() => testCluster().core.readNamespacedPod({ name: "swapped-engine", namespace }))) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    const pod = await testCluster().core.readNamespacedPod({ name: "swapped-engine", namespace }).catch(() => undefined);
    expect(pod === undefined || pod.metadata?.deletionTimestamp !== undefined).toBe(true);
  });
});
