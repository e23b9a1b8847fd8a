// What a pool pass leaves when it stops between two writes, against the real API server (docs/controller.md, "Warm
// pools"): a pool pod's identity and claim are created before the pod, so a pass killed in between leaves them owned
// by the Agent with no pod, where retiring (per pod) never looks. Planted here exactly as such a pass leaves them,
// they are deleted once their grace is past, while the identity and claim of the pool's live pod stay.
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { createClusterWriter } from "../../../src/controller/cluster-writer.ts";
import { createKubeClient } from "../../../src/kube/client.ts";
import { createControllerMetrics } from "../../../src/metrics/controller-metrics.ts";
import { buildPoolNames, buildPoolPodPrerequisites } from "../../../src/sandbox/pool-pods.ts";
import { testCluster, waitFor } from "../harness/index.ts";
import { applyPolicy, createAgent, TEST_RUNTIME_IMAGE, useOperatorWithoutPolicy } from "./operator-harness.ts";

// Short for the test, yet long past the cache's lag behind the server on a loaded machine: the pool's own pod, made
// after its identity and claim, must be in the cache before they are old enough to be taken for leftovers.
const GRACE_MS = 10_000;
const files = useOperatorWithoutPolicy("pool-leftovers", { warmPools: true, poolLeftoverGraceMs: GRACE_MS });

/** The pool's objects of `kind` not being deleted, by name. */
async function listPool(kind: string, apiVersion = "v1"): Promise<string[]> {
  const list = await testCluster().objects.list(apiVersion, kind, files.namespace, undefined, undefined, undefined, undefined, "leviath.dev/pool=notes");
  return (list.items as KubernetesObject[]).filter((o) => !o.metadata?.deletionTimestamp).map((o) => o.metadata?.name ?? "").sort();
}

const KINDS = [["ServiceAccount", "v1"], ["Role", "rbac.authorization.k8s.io/v1"], ["RoleBinding", "rbac.authorization.k8s.io/v1"], ["PersistentVolumeClaim", "v1"]] as const;

describe("a pool pass that stopped before its pod", () => {
  it("leaves an identity and a claim that the next passes delete once their grace is past; the live pod's stay", async () => {
    const agent = await createAgent(files.namespace, "notes", { image: TEST_RUNTIME_IMAGE });
    await applyPolicy({ pools: [{ agent: `${files.namespace}/notes`, size: 1 }] });
    const [live] = await waitFor(async () => {
      const pods = await listPool("Pod");
      return pods.length === 1 ? pods : undefined;
    }, { timeoutMs: 30_000, description: "the pool's pod" });

    // As the killed pass left them: the four prerequisites of pod `dead00beef`, made by the operator, and no pod.
    const writer = createClusterWriter({ client: createKubeClient(testCluster().kc), metrics: createControllerMetrics(), isLeader: () => true });
    const owner = { namespace: files.namespace, name: "notes", uid: agent.metadata?.uid ?? "" };
    for (const obj of buildPoolPodPrerequisites(owner, "dead00beef")) await writer.create(obj);
    const dead = buildPoolNames("notes", "dead00beef");
    expect(await listPool("ServiceAccount")).toContain(dead.identity);

    const gone = await waitFor(async () => {
      const left = await Promise.all(KINDS.map(async ([kind, apiVersion]) => (await listPool(kind, apiVersion)).filter((n) => n === dead.identity || n === dead.workspace)));
      return left.every((l) => l.length === 0) ? true : undefined;
    }, { timeoutMs: 30_000, description: "the stopped pass's identity and claim to be deleted" });
    expect(gone).toBe(true);
    // The pool's own pod kept its identity and claim: once the pool is settled (a pod a lagging cache made twice
    // retired), its objects are exactly the live pod's.
    const objectsOf = async () => [await listPool("Pod"), ...await Promise.all(KINDS.map(([kind, apiVersion]) => listPool(kind, apiVersion)))];
    const expected = [[live], ...KINDS.map(([kind]) => [kind === "PersistentVolumeClaim" ? `${live}-workspace` : live])];
    const settled = await waitFor(async () => { const o = await objectsOf(); return JSON.stringify(o) === JSON.stringify(expected) ? o : undefined; },
      { timeoutMs: 30_000, description: `the pool's objects to be those of ${live}` });
    expect(settled).toEqual(expected);
  });
});
