// Two Runs racing for one warm pool pod, against the real API server (docs/controller.md, "Binding a Run"): each
// reads the pod and writes its claim back at the resourceVersion it read; both reads are made before either write
// (as two controllers' passes may), so the server's version check alone decides, and exactly one Run gets the pod.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterWriter } from "../../../src/controller/cluster-port.ts";
import { createClusterWriter } from "../../../src/controller/cluster-writer.ts";
import { announceBinding, claimPoolPod } from "../../../src/controller/run/run-adoption.ts";
import { createKubeClient } from "../../../src/kube/client.ts";
import type { KubeObject } from "../../../src/kube/objects.ts";
import { createControllerMetrics } from "../../../src/metrics/controller-metrics.ts";
import { DEFAULT_POD_SETTINGS } from "../../../src/sandbox/pod-settings.ts";
import { buildPoolPod, buildPoolPodPrerequisites } from "../../../src/sandbox/pool-pods.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster } from "../harness/index.ts";
import { createAgent, createRun, TEST_RUNTIME_IMAGE } from "./operator-harness.ts";

let namespace = "";
beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("pool-claim");
});
afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});

/** The real writer, whose reads of the pod each wait until both claimants have read it. */
function withReadBarrier(writer: ClusterWriter, readers: number): ClusterWriter {
  let arrived = 0;
  let release: () => void = () => undefined;
  const all = new Promise<void>((r) => (release = r));
  return {
    ...writer,
    async read(resource, ns, name) {
      const obj = await writer.read(resource, ns, name);
      if (++arrived === readers) release();
      await all;
      return obj;
    },
  };
}

describe("two Runs claiming one pool pod", () => {
  it("give it to exactly one of them: the other's write at the same version is refused, as is a retirement of the pod as it was", async () => {
    const agent = await createAgent(namespace, "notes", { image: TEST_RUNTIME_IMAGE });
    const owner = { namespace, name: "notes", uid: agent.metadata?.uid ?? "" };
    const client = createKubeClient(testCluster().kc);
    const writer = createClusterWriter({ client, metrics: createControllerMetrics(), isLeader: () => true });
    for (const obj of buildPoolPodPrerequisites(owner, "0a1b2c3d4e").filter((o) => o.kind === "ServiceAccount")) await writer.create(obj);
    const pod = buildPoolPod({ agent: owner, image: TEST_RUNTIME_IMAGE, readPathVolumes: [] }, "0a1b2c3d4e", DEFAULT_POD_SETTINGS);
    await writer.create(pod);
    const runs = await Promise.all(["a", "b"].map((n) => createRun(namespace, n, { agentRef: { name: "notes" } })));
    const refs = runs.map((r) => ({ namespace, name: r.metadata?.name ?? "", uid: r.metadata?.uid ?? "" }));

    const unbound = (await writer.read("pod", namespace, pod.metadata.name)) as KubeObject;
    const racing = withReadBarrier(writer, 2);
    const won = await Promise.all(refs.map((ref) => claimPoolPod(racing, ref, owner.uid, pod.metadata.name)));
    expect(won.filter(Boolean)).toHaveLength(1);
    const winner = refs[won.indexOf(true)]!;
    const live = (await writer.read("pod", namespace, pod.metadata.name)) as KubeObject;
    expect(live.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", uid: winner.uid, controller: true })]);
    expect(live.metadata.labels).toMatchObject({ "leviath.dev/run": winner.name, "leviath.dev/pool-state": "bound" });
    // The claim tells the pod's sidecar nothing yet: the annotations come once the Run's Role and status are written.
    expect(live.metadata.annotations?.["leviath.dev/bound-run"]).toBeUndefined();

    // Once bound, it is nobody else's: the loser trying again is refused before writing anything.
    const loser = refs[won.indexOf(false)]!;
    expect(await claimPoolPod(writer, loser, owner.uid, pod.metadata.name)).toBe(false);
    expect(((await writer.read("pod", namespace, pod.metadata.name)) as KubeObject).metadata.resourceVersion).toBe(live.metadata.resourceVersion);
    // Nor may it announce itself on the pod: only the Run that owns it does, with its own name and uid.
    await announceBinding(writer, loser, pod.metadata.name);
    expect(((await writer.read("pod", namespace, pod.metadata.name)) as KubeObject).metadata.resourceVersion).toBe(live.metadata.resourceVersion);
    await announceBinding(writer, winner, pod.metadata.name);
    const announced = (await writer.read("pod", namespace, pod.metadata.name)) as KubeObject;
    expect(announced.metadata.annotations).toMatchObject({ "leviath.dev/bound-run": winner.name, "leviath.dev/bound-run-uid": winner.uid });
    // Written once: announcing again changes nothing.
    await announceBinding(writer, winner, pod.metadata.name);
    expect(((await writer.read("pod", namespace, pod.metadata.name)) as KubeObject).metadata.resourceVersion).toBe(announced.metadata.resourceVersion);
    // The pool controller retiring the pod as its cache last saw it (unbound) deletes nothing: it was claimed since.
    expect(await writer.deleteAtVersion(unbound)).toBe(false);
    expect(await writer.read("pod", namespace, pod.metadata.name)).toBeDefined();
    expect(await writer.deleteAtVersion(announced)).toBe(true);
  });
});
