// The pool controller against the real API server (docs/controller.md, "Warm pools"): a LeviathPolicy pool keeps
// its size of unbound pool pods for its Agent, each with its own identity and claim and nothing of any Run; a
// smaller size retires the youngest; an Agent edit retires pods made from the old Agent, and an image the ceilings
// refuse gets none; a pool removed takes its unbound pods with it. No kubelet runs here, so the pods never become
// ready: what is tested is what the controller writes.
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { kubectl, testCluster, waitFor } from "../harness/index.ts";
import { applyPolicy, createAgent, OURS, patchCustom, TEST_RUNTIME_IMAGE, useOperatorWithoutPolicy } from "./operator-harness.ts";

const files = useOperatorWithoutPolicy("warm-pool", { warmPools: true });

type PodLike = KubernetesObject & { spec?: { volumes?: Record<string, unknown>[]; serviceAccountName?: string; initContainers?: { args?: string[] }[]; containers?: { envFrom?: unknown; command?: string[] }[] } };

async function listPool(kind: string, apiVersion = "v1"): Promise<PodLike[]> {
  const list = await testCluster().objects.list(apiVersion, kind, files.namespace, undefined, undefined, undefined, undefined, "leviath.dev/pool=notes");
  return (list.items as PodLike[]).filter((o) => !o.metadata?.deletionTimestamp);
}

const waitForPods = (count: number, check: (pods: PodLike[]) => boolean = () => true) =>
  waitFor(async () => {
    const pods = await listPool("Pod");
    return pods.length === count && check(pods) ? pods : undefined;
  }, { timeoutMs: 30_000, description: `${count} pool pods` });

const hashOf = (pod: PodLike) => pod.metadata?.annotations?.["leviath.dev/pool-hash"];
const names = (objs: KubernetesObject[]) => objs.map((o) => o.metadata?.name ?? "").sort();

/** A pool pod's Role beyond reading its own pod: exec into exactly the sandbox pods its sidecar is told of (`--sandbox-pod`), all its own. */
function expectSandboxExecOnly(rules: unknown[], pod: PodLike): void {
  const args = pod.spec?.initContainers?.[0]?.args ?? [];
  const told = args.flatMap((a, j) => (args[j - 1] === "--sandbox-pod" ? [a] : []));
  expect(told.every((n) => n.startsWith(`${pod.metadata?.name}-sbx-`))).toBe(true);
  expect(rules.slice(1)).toEqual(told.length === 0 ? [] : [expect.objectContaining({ resources: ["pods"], verbs: ["get"], resourceNames: told }), expect.objectContaining({ resources: ["pods/exec"], verbs: ["create", "get"], resourceNames: told })]);
}

describe("a warm pool", () => {
  it("is kept at its size with nothing of any Run, follows the Agent, and goes with its declaration", async () => {
    const agent = await createAgent(files.namespace, "notes", { image: TEST_RUNTIME_IMAGE });
    await applyPolicy({ pools: [{ agent: `${files.namespace}/notes`, size: 2 }] });
    const pods = await waitForPods(2);
    for (const pod of pods) {
      expect(pod.metadata?.labels).toMatchObject({ "leviath.dev/pool-state": "ready", "leviath.dev/component": "engine" });
      expect(pod.metadata?.labels?.["leviath.dev/run"]).toBeUndefined();
      expect(pod.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Agent", name: "notes", uid: agent.metadata?.uid, controller: true })]);
      expect(pod.spec?.volumes?.some((v) => "secret" in v || "configMap" in v)).toBe(false);
      expect(pod.spec?.containers?.[0]?.envFrom).toBeUndefined();
      expect(pod.spec?.initContainers?.[0]?.args).toContain("--pool");
      expect(pod.spec?.serviceAccountName).toBe(pod.metadata?.name);
    }
    // Each pod has its own identity (reading its own pod only) and claim.
    const podNames = names(pods);
    await waitFor(async () => (names(await listPool("PersistentVolumeClaim")).join() === podNames.map((n) => `${n}-workspace`).join() ? true : undefined), { timeoutMs: 10_000, description: "the claims" });
    expect(names(await listPool("ServiceAccount"))).toEqual(podNames);
    const roles = await listPool("Role", "rbac.authorization.k8s.io/v1") as (KubernetesObject & { rules?: { resourceNames?: string[]; verbs?: string[] }[] })[];
    expect(roles.map((r) => r.rules?.[0])).toEqual(podNames.map((n) => expect.objectContaining({ resources: ["pods"], verbs: ["get", "watch"], resourceNames: [n] })));
    // Beyond it, exec into exactly its own sandbox pods (the ones its sidecar is told to open its shell channels to).
    for (const [i, role] of roles.entries()) expectSandboxExecOnly(role.rules ?? [], pods.find((p) => p.metadata?.name === podNames[i])!);

    // The policy's status counts them (never ready here: no kubelet), and kubectl get shows ready/size.
    const policy = await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as { status?: { pools?: unknown[]; poolsDisplay?: string } };
      return p.status?.poolsDisplay === "0/2" ? p : undefined;
    }, { timeoutMs: 30_000, description: "the pools on the policy's status" });
    expect(policy.status?.pools).toEqual([{ agent: `${files.namespace}/notes`, size: 2, ready: 0, starting: 2, adoptions: 0, misses: 0 }]);
    expect((await kubectl(["get", "leviathpolicy", "cluster"])).stdout).toMatch(/POOLS[\s\S]*\s0\/2\s/);

    await applyPolicy({ pools: [{ agent: `${files.namespace}/notes`, size: 1 }] });
    const [kept] = await waitForPods(1);
    expect(podNames).toContain(kept!.metadata?.name);
    await waitFor(async () => ((await listPool("ServiceAccount")).length === 1 ? true : undefined), { timeoutMs: 10_000, description: "the retired pod's identity to go" });

    // An image the policy's ceilings refuse gets no pool pod: a Run of it would not start either.
    await patchCustom("agents", files.namespace, "notes", { spec: { image: "evil.example/x:1" } });
    await waitForPods(0);

    // An Agent edit changes what a Run would pin: the old pod is retired unbound and replaced.
    await applyPolicy({ pools: [{ agent: `${files.namespace}/notes`, size: 1 }], ceilings: { runtimeImages: ["r:2"] } });
    await patchCustom("agents", files.namespace, "notes", { spec: { image: "r:2" } });
    const [replaced] = await waitForPods(1, (p) => hashOf(p[0]!) !== hashOf(kept!));
    expect(replaced!.metadata?.name).not.toBe(kept!.metadata?.name);
    expect((replaced as { spec: { containers: { image: string }[] } }).spec.containers[0]!.image).toBe("r:2");

    await applyPolicy({ ceilings: { runtimeImages: ["r:2"] } });
    await waitForPods(0);
    await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as { status?: { pools?: unknown[] } };
      return p.status?.pools === undefined ? true : undefined;
    }, { timeoutMs: 30_000, description: "the pools to leave the policy's status" });
    await waitFor(async () => ((await listPool("PersistentVolumeClaim")).length === 0 && (await listPool("ServiceAccount")).length === 0 ? true : undefined), { timeoutMs: 10_000, description: "every pool object to go" });
  });
});
