// A Run reconciled by the operator (in this process) against the real API server: exactly the expected children,
// all admitted by Pod Security `restricted`, a second pass that writes nothing, pinning, garbage collection.
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster, waitFor } from "../harness/index.ts";
import { applyPolicy, childrenOf, conditionOf, OURS, createAgent, createRun, isGone, patchCustom, readCustom, waitForCustom, startTestOperator, type Custom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;

const AGENT = {
  image: "registry.example/runtime:1",
  sandbox: { kind: "container", image: "debian:bookworm-slim", network: false },
  readPaths: { allow: ["/data/design"] },
  stages: [
    { name: "survey" },
    { name: "build", sandbox: { kind: "container", image: "node:22-slim" } },
    { name: "digest" },
  ],
};

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("runs");
  // The Agent names its own runtime images; the default one of the test operator is another.
  await applyPolicy({ ceilings: { runtimeImages: ["registry.example/runtime:*"] } });
  op = await startTestOperator();
});

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

const waitForRun = (name: string, check: (run: Custom) => boolean, description: string): Promise<Custom> => waitForCustom("runs", namespace, name, check, description);

const expectedChildren = (run: string) => [
  "ConfigMap/" + `${run}-policy`,
  "NetworkPolicy/" + `${run}-isolate`,
  "PersistentVolumeClaim/" + `${run}-workspace`,
  `Pod/${run}-engine`,
  expect.stringMatching(new RegExp(`^Pod/${run}-sbx-[0-9a-f]{16}$`)),
  expect.stringMatching(new RegExp(`^Pod/${run}-sbx-[0-9a-f]{16}$`)),
  `Role/${run}-sidecar`,
  `RoleBinding/${run}-sidecar`,
  `ServiceAccount/${run}-sidecar`,
];

describe("a Run", () => {
  it("becomes exactly the expected children, every pod admitted in a restricted namespace", async () => {
    await createAgent(namespace, "notes", AGENT);
    const created = await createRun(namespace, "digest-1", { agentRef: { name: "notes" }, task: "digest docs/" });
    const run = await waitForRun("digest-1", (r) => conditionOf(r, "PolicyResolved")?.status === "True" && r.status?.sandboxes !== undefined, "the Run to be resolved");
    const children = await waitFor(async () => {
      const c = await childrenOf(namespace, "digest-1");
      return c.length >= 9 ? c : undefined;
    }, { description: "nine children" });
    expect(children.map((c) => c.ref)).toEqual(expectedChildren("digest-1"));
    for (const { obj } of children) {
      expect(obj.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", name: "digest-1", uid: created.metadata!.uid, controller: true })]);
      expect(obj.metadata?.managedFields?.map((m) => m.manager)).toContain("leviath-operator");
    }
    const pods = children.filter((c) => c.ref.startsWith("Pod/")).map((c) => c.obj as V1Pod);
    for (const pod of pods) expect(pod.spec?.securityContext?.runAsNonRoot).toBe(true);
    const engine = pods.find((p) => p.metadata?.name === "digest-1-engine")!;
    expect(engine.spec?.containers.map((c) => c.image)).toEqual(["registry.example/runtime:1"]);
    // The sidecar is a native sidecar, accepted as such by the real API server.
    expect(engine.spec?.initContainers?.map((c) => [c.image, c.restartPolicy])).toEqual([["registry.example/leviath:test", "Always"]]);
    expect(engine.spec?.containers[0]!.volumeMounts?.map((m) => m.mountPath)).not.toContain("/var/run/secrets/kubernetes.io/serviceaccount");

    expect(run.status?.phase).toBe("Pending");
    expect(run.status?.agent).toEqual({ name: "notes", generation: 1 });
    expect(run.status?.readPaths).toEqual({ declared: 1, granted: 0, display: "0/1" });
    expect(conditionOf(run, "SandboxReady")).toMatchObject({ status: "False", reason: "WaitingForPods" });
    expect(conditionOf(run, "NetworkIsolated")).toMatchObject({ status: "Unknown", reason: "NetworkPolicyApplied" });
    expect(run.status?.observedGeneration).toBe(1);

    const agent = await waitFor(async () => {
      const a = await readCustom("agents", namespace, "notes");
      return a.status?.valid === true ? a : undefined;
    }, { description: "the Agent's status" });
    expect(agent.status?.readPaths).toEqual({ declared: 1, granted: 0, display: "0/1" });
    expect((agent.status?.findings as { code: string }[]).map((f) => f.code).filter((c) => c.startsWith("read-paths"))).toEqual(["read-paths-not-granted", "read-paths-declared"]);
  });

  it("is not written again by a second reconcile", async () => {
    const before = await childrenOf(namespace, "digest-1");
    const runBefore = await readCustom("runs", namespace, "digest-1");
    const reconciles = async () => (await op.operator.metrics.registry.getSingleMetric("controller_runtime_reconcile_total")!.get()).values
      .filter((v) => v.labels["controller"] === "run").reduce((n, v) => n + v.value, 0);
    const passesBefore = await reconciles();
    // A label change is an event on the Run, so the controller reconciles it again with nothing to do.
    await patchCustom("runs", namespace, "digest-1", { metadata: { labels: { touched: "yes" } } });
    await waitFor(async () => (await reconciles()) > passesBefore, { description: "another reconcile of the Run" });
    await new Promise((r) => setTimeout(r, 500));
    // Not the operator's write counter: it also counts writes for objects other test files leave in other
    // namespaces (the operator watches them all). Every object of this Run keeps its resourceVersion instead.
    const after = await childrenOf(namespace, "digest-1");
    expect(after.map((c) => [c.ref, c.obj.metadata?.resourceVersion])).toEqual(before.map((c) => [c.ref, c.obj.metadata?.resourceVersion]));
    expect((await readCustom("runs", namespace, "digest-1")).status).toEqual(runBefore.status);
  });

  it("creates the account, RBAC and NetworkPolicy by POST, and takes back every edit of the NetworkPolicy and the Role", async () => {
    type Managed = {
      spec?: { policyTypes?: string[]; egress?: unknown[]; ingress?: unknown[]; podSelector?: { matchLabels?: Record<string, string> } };
      rules?: { resources?: string[] }[]; metadata?: { managedFields?: { manager?: string; operation?: string }[] };
    };
    const read = async (apiVersion: string, kind: string, name: string) => (await testCluster().objects.read({ apiVersion, kind, metadata: { name, namespace } })) as Managed;
    const ours = (o: Managed) => o.metadata?.managedFields?.filter((m) => m.manager === "leviath-operator").map((m) => m.operation).sort();
    // Created: the fields are the controller's by an Update (a POST); none is applied.
    expect(ours(await read("rbac.authorization.k8s.io/v1", "Role", "digest-1-sidecar"))).toEqual(["Update"]);
    expect(ours(await read("v1", "ServiceAccount", "digest-1-sidecar"))).toEqual(["Update"]);
    const created = await read("networking.k8s.io/v1", "NetworkPolicy", "digest-1-isolate");
    expect(ours(created)).toEqual(["Update"]);
    // A namespace editor lets egress and ingress in, narrows the selector with a key of its own (fields the
    // controller never sets, which an apply would keep), and widens the sidecar's Role.
    const isolate = created.spec!;
    await kubectl(["patch", "networkpolicy", "digest-1-isolate", "-n", namespace, "--type=merge", "-p", JSON.stringify({
      spec: { egress: [{}], ingress: [{ from: [{ podSelector: {} }] }], podSelector: { matchLabels: { "editor/only": "yes" } } },
    })]);
    await kubectl(["patch", "role", "digest-1-sidecar", "-n", namespace, "--type=json", "-p", JSON.stringify([{ op: "add", path: "/rules/-", value: { apiGroups: [""], resources: ["secrets"], verbs: ["get"] } }])]);
    const np = await waitFor(async () => {
      const now = await read("networking.k8s.io/v1", "NetworkPolicy", "digest-1-isolate");
      return now.spec?.egress === undefined && now.spec?.ingress === undefined && !now.spec?.podSelector?.matchLabels?.["editor/only"] ? now : undefined;
    }, { description: "the NetworkPolicy to be replaced with the controller's own" });
    expect(np.spec).toEqual(isolate);
    expect(ours(np)).toEqual(["Update"]);
    const role = await waitFor(async () => {
      const now = await read("rbac.authorization.k8s.io/v1", "Role", "digest-1-sidecar");
      return now.rules?.some((r) => r.resources?.includes("secrets")) ? undefined : now;
    }, { description: "the Role to lose the added rule" });
    // Applied back: the created Role's rules (an atomic list) are replaced whole, the added rule gone.
    expect(ours(role)).toEqual(["Apply", "Update"]);
  });

  it("takes over a NetworkPolicy a namespace editor put under the Run's name first, replacing it whole", async () => {
    type Np = { spec?: Record<string, unknown> & { podSelector?: { matchLabels?: Record<string, string> } }; metadata?: { ownerReferences?: { uid?: string; controller?: boolean }[] } };
    // Made before the Run exists: no owner, none of the controller's labels, and a rule that lets everything out.
    await kubectl(["create", "-f", "-"], { input: JSON.stringify({
      apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: "squatted-isolate", namespace },
      spec: { podSelector: { matchLabels: { "editor/only": "yes" } }, policyTypes: ["Ingress", "Egress"], egress: [{}] },
    }) });
    const run = await createRun(namespace, "squatted", { agentRef: { name: "notes" }, task: "digest docs/" });
    const np = await waitFor(async () => {
      const now = (await testCluster().objects.read({ apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: "squatted-isolate", namespace } })) as Np;
      return now.metadata?.ownerReferences?.some((r) => r.controller && r.uid === run.metadata?.uid) ? now : undefined;
    }, { description: "the NetworkPolicy taken over by the Run" });
    // Exactly the controller's own, as the first Run's was created: nothing of the editor's is left.
    const created = (await testCluster().objects.read({ apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: "digest-1-isolate", namespace } })) as Np;
    const selector = Object.fromEntries(Object.entries(created.spec?.podSelector?.matchLabels ?? {}).map(([k, v]) => [k, v === "digest-1" ? "squatted" : v]));
    expect(selector).toHaveProperty(["leviath.dev/run"], "squatted");
    expect(np.spec).toEqual({ ...created.spec, podSelector: { matchLabels: selector } });
    expect(np.spec?.["egress"]).toBeUndefined();
  });

  it("logs every line of a reconcile with the object's key", () => {
    const reconcileLines = op.logs.filter((l) => l["controller"] === "run");
    expect(reconcileLines.length).toBeGreaterThan(0);
    // The operator watches every namespace, so Runs that earlier test files left behind are reconciled too:
    // every line must carry a key, whichever object it is about.
    expect(reconcileLines.some((l) => l["namespace"] === namespace)).toBe(true);
    const keyless = reconcileLines.filter((l) => typeof l["namespace"] !== "string" || typeof l["name"] !== "string" || typeof l["reconcileID"] !== "string");
    expect(keyless).toEqual([]);
  });

  it("keeps a Run in flight on the Agent it started with", async () => {
    const cmBefore = await testCluster().core.readNamespacedConfigMap({ name: "digest-1-policy", namespace });
    await patchCustom("agents", namespace, "notes", { spec: { image: "registry.example/runtime:2", sandbox: { kind: "container", image: "alpine:3", network: true } } });
    await waitFor(async () => (await readCustom("agents", namespace, "notes")).status?.observedGeneration === 2, { description: "the Agent change to be seen" });
    await createRun(namespace, "digest-2", { agentRef: { name: "notes" } });
    const second = await waitForRun("digest-2", (r) => r.status?.agent !== undefined, "the second Run to pin");
    expect(second.status?.agent).toEqual({ name: "notes", generation: 2 });

    const first = await readCustom("runs", namespace, "digest-1");
    expect(first.status?.agent).toEqual({ name: "notes", generation: 1 });
    const cmAfter = await testCluster().core.readNamespacedConfigMap({ name: "digest-1-policy", namespace });
    expect(cmAfter.metadata?.resourceVersion).toBe(cmBefore.metadata?.resourceVersion);
    const engine = await testCluster().core.readNamespacedPod({ name: "digest-1-engine", namespace });
    expect(engine.spec?.containers[0]!.image).toBe("registry.example/runtime:1");
    expect((await childrenOf(namespace, "digest-1")).map((c) => c.ref)).toEqual(expectedChildren("digest-1"));
  });

  it("loses its pods, and its sidecar identity, once it reaches a terminal phase (cancelled here; the kubelet's phases are proven on the real node)", async () => {
    // No kubelet runs here, so no test plays its part: the engine pod's own end is checked in test/e2e.
    await patchCustom("runs", namespace, "digest-1", { spec: { desiredState: "Cancelled" } });
    const run = await waitForRun("digest-1", (r) => r.status?.phase === "Cancelled", "the Run to be cancelled");
    expect(run.status?.completedAt).toBeTruthy();
    const children = await waitFor(async () => {
      const c = await childrenOf(namespace, "digest-1");
      return c.length === 2 ? c : undefined;
    }, { description: "the pods, RBAC and NetworkPolicy to go" });
    expect(children.map((c) => c.ref)).toEqual(["ConfigMap/digest-1-policy", "PersistentVolumeClaim/digest-1-workspace"]);
    const after = await readCustom("runs", namespace, "digest-1");
    expect(conditionOf(after, "SandboxReady")).toMatchObject({ status: "False", reason: "RunFinished" });
    expect(conditionOf(after, "Completed")).toMatchObject({ status: "True", reason: "Cancelled" });
  });

  it("is removed with all its children by garbage collection", async () => {
    const { custom } = testCluster();
    expect((await childrenOf(namespace, "digest-2")).length).toBe(8);
    await custom.deleteNamespacedCustomObject({ group: "leviath.dev", version: "v1alpha1", plural: "runs", namespace, name: "digest-2" });
    await waitFor(async () => (await childrenOf(namespace, "digest-2")).length === 0, { timeoutMs: 90_000, description: "the garbage collector to delete digest-2's children" });
    expect(await isGone(() => readCustom("runs", namespace, "digest-2"))).toBe(true);
  });
});
