// Resuming a Run (docs/controller.md, "Resuming a Run"), reconciled by the operator against the real API server:
// a new `leviath.dev/resume` value re-resolves the read-path grants, and only they, against the current
// LeviathPolicy into a new immutable snapshot recorded in status.resume; a resume that changes nothing says so;
// only a run that waits or had a read refused is resumed; a ConfigMap planted under the next snapshot's name is
// refused, not enforced; the run's pods are left as they are. The sidecar's switch is in sidecar-cluster tests.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunPolicy } from "../../../src/api/run-policy.ts";
import { computeSnapshotSha256 } from "../../../src/controller/run/run-resume.ts";
import { checkResumedRunPolicy } from "../../../src/sandbox/resume-snapshot.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster } from "../harness/index.ts";
import { applyPolicy, createAgent, createRun, OURS, patchCustom, startTestOperator, TEST_RUNTIME_IMAGE, waitForCustom, type Custom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;

const AGENT = { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "none" }, stages: [{ name: "main" }], readPaths: { allow: ["/data/shared", "/data/more"] } };

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("resume");
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  await applyPolicy({ toolPermissions: { shell: "ask" } });
  op = await startTestOperator();
  await createAgent(namespace, "reader", AGENT);
});

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

type Resume = { token: string; outcome: string; message: string; sequence: number; snapshot?: string; snapshotSha256?: string; policyGeneration?: number; added?: string[]; removed?: string[] };
const resumeOf = (r: Custom) => r.status?.resume as Resume | undefined;
const resume = (run: string, token: string) => patchCustom("runs", namespace, run, { metadata: { annotations: { "leviath.dev/resume": token } } });
const answered = (run: string, token: string) => waitForCustom("runs", namespace, run, (r) => resumeOf(r)?.token === token, `the resume '${token}' answered`);
/** What the sidecar reports when the read-path fence refused reads (status.gateDecisions, its field). */
const reportRefusedRead = (run: string) => kubectl(["patch", "run", run, "-n", namespace, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status: { gateDecisions: { read_path: 1 } } })]);
const configMap = (name: string) => testCluster().core.readNamespacedConfigMap({ name, namespace });
const policyGeneration = async () => ((await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as { metadata: { generation: number } }).metadata.generation;

describe("resuming a Run", () => {
  it("is refused for a run that neither waits nor had a read refused", async () => {
    await createRun(namespace, "busy", { agentRef: { name: "reader" } });
    await waitForCustom("runs", namespace, "busy", (r) => r.status?.agent !== undefined, "the Run pinned");
    await resume("busy", "r1");
    const run = await answered("busy", "r1");
    expect(resumeOf(run)).toMatchObject({ outcome: "Refused", sequence: 0, message: "only a run that waits for input or had a read refused can be resumed; this one is Pending and no read was refused" });
    expect(resumeOf(run)?.snapshot).toBeUndefined();
  });

  it("re-resolves only the grants into a new immutable snapshot, says what was added, and leaves the pods and the pinned snapshot alone", async () => {
    await createRun(namespace, "refused", { agentRef: { name: "reader" } });
    const pinned = await waitForCustom("runs", namespace, "refused", (r) => r.status?.agent !== undefined, "the Run pinned");
    expect(pinned.status?.readPaths).toMatchObject({ display: "0/2" });
    await reportRefusedRead("refused");

    await resume("refused", "before-grant");
    const unchanged = await answered("refused", "before-grant");
    expect(resumeOf(unchanged)).toMatchObject({ outcome: "Unchanged", sequence: 0, added: [], removed: [] });
    expect(resumeOf(unchanged)?.message).toBe(`LeviathPolicy generation ${await policyGeneration()} grants this run exactly the read paths it already has (0 entries); nothing changed`);

    const engineBefore = await testCluster().core.readNamespacedPod({ name: "refused-engine", namespace });
    // The admin grants one declared path, and also loosens a permission: the resume takes the grant only.
    await applyPolicy({ toolPermissions: { shell: "allow" }, readPaths: { perAgent: { [`${namespace}/reader`]: ["/data/shared"] } } });
    const generation = await policyGeneration();
    await resume("refused", "after-grant");
    const resumed = await answered("refused", "after-grant");
    const record = resumeOf(resumed)!;
    expect(record).toMatchObject({ outcome: "Resumed", sequence: 1, snapshot: "refused-policy-r01", policyGeneration: generation, added: ["/data/shared"], removed: [] });
    expect(record.message).toBe(`read-path grants re-resolved against LeviathPolicy generation ${generation}: added '/data/shared'`);
    expect(resumed.status?.readPaths).toMatchObject({ display: "1/2" });
    // What the run is pinned to stays on record.
    expect(resumed.status?.policy).toEqual(pinned.status?.policy);

    const cm = await configMap("refused-policy-r01");
    expect(cm.immutable).toBe(true);
    expect(cm.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Run", name: "refused", controller: false });
    const text = cm.data!["run-policy.json"]!;
    expect(computeSnapshotSha256(text)).toBe(record.snapshotSha256);
    const next = JSON.parse(text) as RunPolicy;
    const base = JSON.parse((await configMap("refused-policy")).data!["run-policy.json"]!) as RunPolicy;
    expect(next.readPaths).toEqual({ declared: ["/data/shared", "/data/more"], granted: ["/data/shared"], allowBlueprintReadPaths: false, resumed: { sequence: 1, policyGeneration: generation } });
    expect(next.toolPermissions.ceiling).toEqual({ shell: "ask" });
    expect(checkResumedRunPolicy(base, next)).toBeUndefined();
    expect(base.readPaths.granted).toEqual([]);
    expect(JSON.parse(cm.data!["resume.json"]!)).toMatchObject({ sequence: 1, token: "after-grant", policyGeneration: generation, added: ["/data/shared"], removed: [] });
    // The sidecar's Role lets it read exactly the snapshots a resume may write.
    const role = JSON.parse((await kubectl(["get", "role", "refused-sidecar", "-n", namespace, "-o", "json"])).stdout) as { rules: { resources?: string[]; verbs: string[]; resourceNames?: string[] }[] };
    const names = role.rules.find((r) => r.resources?.includes("configmaps") && r.verbs.join() === "get")?.resourceNames;
    expect(names?.[0]).toBe("refused-policy-r01");
    expect(names).toHaveLength(16);
    const engineAfter = await testCluster().core.readNamespacedPod({ name: "refused-engine", namespace });
    expect(engineAfter.metadata?.uid).toBe(engineBefore.metadata?.uid);

    // The same answer again changes nothing; the snapshot in force stays r01.
    await resume("refused", "again");
    const again = resumeOf(await answered("refused", "again"))!;
    expect(again).toMatchObject({ outcome: "Unchanged", sequence: 1, snapshot: "refused-policy-r01", snapshotSha256: record.snapshotSha256 });
  });

  it("refuses a snapshot planted under the next name, and keeps the one in force", async () => {
    const planted = { metadata: { name: "refused-policy-r02", ownerReferences: [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: "refused", uid: (await waitForCustom("runs", namespace, "refused", () => true, "the Run")).metadata!.uid!, controller: false }] }, data: { "run-policy.json": "{}" } };
    await testCluster().core.createNamespacedConfigMap({ namespace, body: planted });
    await applyPolicy({ toolPermissions: { shell: "allow" }, readPaths: { perAgent: { [`${namespace}/reader`]: ["/data/shared", "/data/more"] } } });
    await resume("refused", "planted");
    const record = resumeOf(await answered("refused", "planted"))!;
    expect(record).toMatchObject({ outcome: "Refused", sequence: 1, snapshot: "refused-policy-r01" });
    expect(record.message).toBe("ConfigMap 'refused-policy-r02' exists and is not the snapshot this resume computed; delete it and resume again");

    await testCluster().core.deleteNamespacedConfigMap({ name: "refused-policy-r02", namespace });
    await resume("refused", "cleaned");
    const resumed = resumeOf(await answered("refused", "cleaned"))!;
    expect(resumed).toMatchObject({ outcome: "Resumed", sequence: 2, snapshot: "refused-policy-r02", added: ["/data/more"], removed: [] });
  });

  it("is refused once the run finished", async () => {
    await patchCustom("runs", namespace, "refused", { spec: { desiredState: "Cancelled" } });
    await waitForCustom("runs", namespace, "refused", (r) => r.status?.phase === "Cancelled", "the Run cancelled");
    await resume("refused", "too-late");
    const record = resumeOf(await answered("refused", "too-late"))!;
    expect(record).toMatchObject({ outcome: "Refused", sequence: 2, snapshot: "refused-policy-r02", message: "the run is Cancelled: a finished run cannot be resumed; start a new Run" });
  });
});
