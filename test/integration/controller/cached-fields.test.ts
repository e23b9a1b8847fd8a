// What the operator's informers keep, against the real API server (src/controller/cached-fields.ts): pods without
// their spec and with only the status the Run reconciler reads, Namespaces as metadata, no kubectl annotation, one
// copy of identical snapshot texts; and the reconcilers still work from that (a deleted pod comes back as it was).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeObject } from "../../../src/kube/objects.ts";
import { LAST_APPLIED_ANNOTATION } from "../../../src/kube/informer.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "../harness/index.ts";
import { childrenOf, createAgent, OURS, startTestOperator, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;

// No image: the test operator's default runtime image, which any policy left by another file allows.
const AGENT = { sandbox: { kind: "container", image: "debian:bookworm-slim", network: false }, stages: [{ name: "one" }] };
const CHILDREN = 8;

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("cached");
  op = await startTestOperator();
});

afterAll(async () => {
  await op?.stop();
  if (namespace) await deleteNamespace(namespace);
});

/** A Run created as `kubectl apply` creates it: with the whole object in the last-applied annotation. */
async function createAppliedRun(name: string): Promise<void> {
  const body = { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name, namespace }, spec: { agentRef: { name: "trim" }, task: "t" } };
  await testCluster().custom.createNamespacedCustomObject({
    ...OURS.runs, namespace,
    body: { ...body, metadata: { ...body.metadata, annotations: { [LAST_APPLIED_ANNOTATION]: JSON.stringify(body), "example.com/kept": "yes" } } },
  });
}

const podsOf = async (run: string) => (await childrenOf(namespace, run)).filter((c) => c.ref.startsWith("Pod/")).map((c) => c.obj as KubeObject);

describe("the operator's caches", () => {
  it("keep what the reconcilers read of pods, ConfigMaps, Namespaces and Runs, and drop the rest", async () => {
    await createAgent(namespace, "trim", AGENT);
    await createAppliedRun("trim-1");
    await createAppliedRun("trim-2");
    await waitFor(async () => (await childrenOf(namespace, "trim-1")).length >= CHILDREN && (await childrenOf(namespace, "trim-2")).length >= CHILDREN, { description: "both Runs' children" });
    const cache = op.operator.manager.cache;

    const served = await podsOf("trim-1");
    expect(served.length).toBeGreaterThan(0);
    for (const pod of served) {
      const cached = await waitFor(() => {
        const c = cache.get("pod", namespace, pod.metadata.name);
        return c?.metadata.resourceVersion === pod.metadata.resourceVersion ? c : undefined;
      }, { description: `the cache to hold pod ${pod.metadata.name} as served` });
      // The server's pod has a spec and a QoS class; the cache has neither.
      expect(pod["spec"]).toBeDefined();
      expect((pod["status"] as { qosClass?: string }).qosClass).toBeDefined();
      expect(cached["spec"]).toBeUndefined();
      expect(cached["status"]).toEqual({ phase: (pod["status"] as { phase: string }).phase });
      // What syncPod and the owner index compare: the same as served.
      expect(cached.metadata.annotations).toEqual(pod.metadata.annotations);
      expect(cached.metadata.ownerReferences).toEqual(pod.metadata.ownerReferences);
      expect(cached.metadata.uid).toBe(pod.metadata.uid);
      expect(cached.metadata.managedFields).toBeUndefined();
    }

    // The snapshot ConfigMaps hold the same data as the server's (the start-snapshot check reads it).
    for (const run of ["trim-1", "trim-2"]) {
      const cm = (await childrenOf(namespace, run)).find((c) => c.ref === `ConfigMap/${run}-policy`)!.obj as KubeObject;
      expect(cache.get("configMap", namespace, `${run}-policy`)?.["data"]).toEqual(cm["data"]);
    }

    // A Namespace is its metadata (its Pod Security labels); the server's has a spec and a status.
    const ns = cache.get("namespace", undefined, namespace)!;
    expect(ns.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    expect(Object.keys(ns).sort()).toEqual(["apiVersion", "kind", "metadata"]);

    // The Run keeps its own annotations and loses kubectl's copy of itself.
    const run = cache.get("run", namespace, "trim-1")!;
    expect(run.metadata.annotations).toEqual({ "example.com/kept": "yes" });
    expect(run["spec"]).toMatchObject({ agentRef: { name: "trim" } });
  });

  it("a pod deleted behind the controller's back comes back with the same spec, from the trimmed cache", async () => {
    const [pod] = await podsOf("trim-2");
    expect(pod).toBeDefined();
    await testCluster().core.deleteNamespacedPod({ name: pod!.metadata.name, namespace, gracePeriodSeconds: 0 });
    const again = await waitFor(async () => {
      const now = (await podsOf("trim-2")).find((p) => p.metadata.name === pod!.metadata.name);
      return now && now.metadata.uid !== pod!.metadata.uid ? now : undefined;
    }, { description: "the pod re-created" });
    expect(again["spec"]).toEqual(pod!["spec"]);
    expect(again.metadata.annotations).toEqual(pod!.metadata.annotations);
  });
});
