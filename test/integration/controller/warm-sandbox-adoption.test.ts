// Warm sandbox pods against the real API server (docs/controller.md, "Warm sandbox pods"): a pool keeps, for each of
// its engine pods, the sandbox pods a Run of its Agent plans (one per signature, mounting that engine pod's claim,
// the network = false one under the pool's NetworkPolicy); a Run that adopts the engine pod adopts those very pods
// (same uid: claimed, not made again), the pool refills both, and a pool removed takes its unbound ones with it
// while the adopted ones stay the Run's. No kubelet runs here: the engine pod is made ready as a kubelet reports it,
// through its status subresource; everything else is the controller's.
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { kubectl, testCluster, waitFor } from "../harness/index.ts";
import { applyPolicy, createAgent, createRun, TEST_RUNTIME_IMAGE, useOperatorWithoutPolicy, waitForCustom } from "./operator-harness.ts";

const files = useOperatorWithoutPolicy("pool-sbx", { warmPools: true });

type Obj = KubernetesObject & {
  spec?: { volumes?: { persistentVolumeClaim?: { claimName: string } }[]; podSelector?: { matchLabels?: Record<string, string> } };
  rules?: { resources: string[]; resourceNames?: string[] }[];
};

async function list(kind: string, selector: string, apiVersion = "v1"): Promise<Obj[]> {
  const found = await testCluster().objects.list(apiVersion, kind, files.namespace, undefined, undefined, undefined, undefined, selector);
  return (found.items as Obj[]).filter((o) => !o.metadata?.deletionTimestamp);
}

const markReady = (pod: string) => kubectl(["patch", "pod", pod, "-n", files.namespace, "--subresource", "status", "--type", "merge", "-p",
  JSON.stringify({ status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } })]);

/** The unbound pool's engine pods and, once each has both, their sandbox pods (by engine pod). */
const unboundPool = (count: number, not: readonly string[] = []) => waitFor(async () => {
  const engines = (await list("Pod", "leviath.dev/pool=tools,leviath.dev/pool-state=ready,leviath.dev/component=engine")).filter((p) => !not.includes(p.metadata?.name ?? ""));
  const sandboxes = await list("Pod", "leviath.dev/pool=tools,leviath.dev/pool-state=ready,leviath.dev/component=sandbox");
  const byEngine = new Map(engines.map((e) => [e.metadata?.name ?? "", sandboxes.filter((s) => s.metadata?.annotations?.["leviath.dev/pool-pair"] === e.metadata?.name)]));
  return engines.length === count && [...byEngine.values()].every((s) => s.length === 2) ? byEngine : undefined;
}, { timeoutMs: 30_000, description: `${count} unbound pool engine pods with two sandbox pods each` });

const uids = (objs: Obj[]) => objs.map((o) => o.metadata?.uid).sort();
const names = (objs: Obj[]) => objs.map((o) => o.metadata?.name ?? "").sort();

describe("a warm pool's sandbox pods", () => {
  it("are kept per engine pod, adopted with it by a Run, refilled, and retired with the pool", async () => {
    // Two signatures: the default stage without the network, a second one with it.
    await createAgent(files.namespace, "tools", {
      image: TEST_RUNTIME_IMAGE,
      sandbox: { kind: "container", image: "debian:bookworm-slim", network: false },
      stages: [{ name: "main" }, { name: "fetch", sandbox: { kind: "container", image: "debian:bookworm-slim", network: true } }],
    });
    await applyPolicy({ pools: [{ agent: `${files.namespace}/tools`, size: 1 }] });
    const first = await unboundPool(1);
    const [[engine, sandboxes]] = [...first] as [[string, Obj[]]];
    expect(names(sandboxes).every((n) => n.startsWith(`${engine}-sbx-`))).toBe(true);
    for (const pod of sandboxes) {
      expect(pod.spec?.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName).toBe(`${engine}-workspace`);
      expect(pod.metadata?.labels?.["leviath.dev/run"]).toBeUndefined();
      expect(pod.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Agent", name: "tools", controller: true })]);
    }
    const isolated = sandboxes.filter((p) => p.metadata?.labels?.["leviath.dev/network"] === "none");
    expect(isolated).toHaveLength(1);
    const [poolPolicy] = await list("NetworkPolicy", "leviath.dev/pool=tools", "networking.k8s.io/v1");
    expect(poolPolicy?.spec?.podSelector?.matchLabels).toEqual({ "leviath.dev/pool": "tools", "leviath.dev/network": "none" });
    // NetworkPolicies add up: an egress rule someone adds to the pool's would let an adopted pod out, so it is put back.
    await kubectl(["patch", "networkpolicy", poolPolicy?.metadata?.name ?? "", "-n", files.namespace, "--type", "merge", "-p", JSON.stringify({ spec: { egress: [{}] } })]);
    await waitFor(async () => {
      const [now] = await list("NetworkPolicy", "leviath.dev/pool=tools", "networking.k8s.io/v1");
      return now !== undefined && !("egress" in (now.spec ?? {})) && now.metadata?.resourceVersion !== poolPolicy?.metadata?.resourceVersion ? true : undefined;
    }, { timeoutMs: 30_000, description: "the pool's NetworkPolicy to be put back" });
    await markReady(engine);

    // The Run adopts the engine pod and, with it, those very sandbox pods: same uids, now the Run's.
    await createRun(files.namespace, "w1", { agentRef: { name: "tools" } });
    const run = await waitForCustom("runs", files.namespace, "w1", (r) => r.status?.["startedFrom"] !== undefined, "w1 to start");
    expect(run.status).toMatchObject({ startedFrom: "pool", enginePod: engine });
    const adopted = await waitFor(async () => {
      const found = (await list("Pod", "leviath.dev/run=w1,leviath.dev/component=sandbox")).filter((p) => p.metadata?.ownerReferences?.some((r) => r.uid === run.metadata?.uid));
      return found.length === 2 ? found : undefined;
    }, { timeoutMs: 30_000, description: "the Run's two sandbox pods" });
    expect(uids(adopted)).toEqual(uids(sandboxes));
    for (const pod of adopted) {
      expect(pod.metadata?.labels).toMatchObject({ "leviath.dev/pool-state": "bound", "leviath.dev/pool": "tools" });
      expect(pod.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", name: "w1", uid: run.metadata?.uid, controller: true })]);
    }
    // The Run's NetworkPolicy selects its network = false pod by the label it got; its sidecar may exec into exactly these.
    const runPolicy = await waitFor(async () => (await list("NetworkPolicy", "leviath.dev/run=w1", "networking.k8s.io/v1"))[0], { timeoutMs: 10_000, description: "the Run's NetworkPolicy" });
    expect(adopted.find((p) => p.metadata?.labels?.["leviath.dev/network"] === "none")?.metadata?.labels).toMatchObject(runPolicy.spec?.podSelector?.matchLabels ?? { missing: "selector" });
    const role = await waitFor(async () => (await list("Role", "leviath.dev/run=w1", "rbac.authorization.k8s.io/v1")).find((r) => r.metadata?.name === "w1-sidecar"), { timeoutMs: 10_000, description: "the Run's Role" });
    expect(role.rules?.find((r) => r.resources.includes("pods/exec"))?.resourceNames).toEqual(names(sandboxes));

    // The pool refills both: a new engine pod with two new sandbox pods of its own.
    const refill = await unboundPool(1, [engine]);
    const [[next, nextSandboxes]] = [...refill] as [[string, Obj[]]];
    expect(next).not.toBe(engine);
    expect(uids(nextSandboxes).some((u) => uids(sandboxes).includes(u))).toBe(false);

    // The pool removed: its unbound pods go, the adopted ones stay the Run's.
    await applyPolicy({ pools: [] });
    await waitFor(async () => ((await list("Pod", "leviath.dev/pool=tools,leviath.dev/pool-state=ready")).length === 0 ? true : undefined), { timeoutMs: 30_000, description: "the unbound pool pods to go" });
    expect(uids(await list("Pod", "leviath.dev/run=w1,leviath.dev/component=sandbox"))).toEqual(uids(sandboxes));
  });
});
