// Runs adopting warm pool pods against the real API server (docs/controller.md, "Binding a Run"): three Runs race for
// a pool of two ready pods, two adopt one each and the third starts cold; an adopted pod is the Run's (labels,
// annotations, owner, claim, the Run's Role bound to the pod's account) and the pool refills; a Run the pool cannot
// serve misses, and the policy's status and the metrics count it all. No kubelet runs here: a pool pod is made
// ready as a kubelet reports it, through the pod's status subresource; everything else is the controller's.
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { kubectl, testCluster, waitFor } from "../harness/index.ts";
import { applyPolicy, createAgent, createRun, OURS, patchCustom, TEST_RUNTIME_IMAGE, useOperatorWithoutPolicy, waitForCustom, type Custom } from "./operator-harness.ts";

const files = useOperatorWithoutPolicy("pool-adopt", { warmPools: true });

type Obj = KubernetesObject & { subjects?: { name: string }[] };

async function list(kind: string, selector: string, apiVersion = "v1"): Promise<Obj[]> {
  const found = await testCluster().objects.list(apiVersion, kind, files.namespace, undefined, undefined, undefined, undefined, selector);
  return (found.items as Obj[]).filter((o) => !o.metadata?.deletionTimestamp);
}

/** What a kubelet reports once both containers run and the sidecar's readiness probe passes. */
const markReady = (pod: string) => kubectl(["patch", "pod", pod, "-n", files.namespace, "--subresource", "status", "--type", "merge", "-p",
  JSON.stringify({ status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } })]);

const readyPool = (count: number) => waitFor(async () => {
  const pods = await list("Pod", "leviath.dev/pool=notes,leviath.dev/pool-state=ready,leviath.dev/component=engine");
  return pods.length === count ? pods.map((p) => p.metadata?.name ?? "") : undefined;
}, { timeoutMs: 30_000, description: `${count} unbound pool pods` });

const started = (name: string) => waitForCustom("runs", files.namespace, name, (r) => r.status?.["startedFrom"] !== undefined, `${name} to start`);

const sample = (text: string, series: string) => Number(text.split("\n").find((l) => l.startsWith(`${series} `))?.split(" ")[1]);

/** An answer to Run `name` is read (and marked consumed) by the adopted pod's account, not by a `<run>-sidecar` no pod runs as. */
async function expectAnswersReadBy(name: string, pod: string): Promise<void> {
  const approval = { apiVersion: "leviath.dev/v1alpha1", kind: "Approval", metadata: { name: `${name}-answer`, namespace: files.namespace }, spec: { runRef: { name }, approvalId: "gate-1", decision: "allowOnce", reason: "e" } };
  await kubectl(["create", "-f", "-"], { input: JSON.stringify(approval) });
  const [bound] = await waitFor(async () => {
    const found = await list("Approval", `leviath.dev/run=${name}`, "leviath.dev/v1alpha1");
    return found.length === 1 ? found : undefined;
  }, { timeoutMs: 10_000, description: "the Approval bound to its Run" });
  expect(bound!.metadata?.annotations?.["leviath.dev/sidecar-service-account"]).toBe(pod);
  const reader = await waitFor(async () => (await list("RoleBinding", `leviath.dev/run=${name}`, "rbac.authorization.k8s.io/v1")).find((b) => b.metadata?.name === `${name}-approval-reader` && b.subjects?.[0]?.name === pod), { timeoutMs: 10_000, description: "the Run's approval reader bound to the pool pod's account" });
  expect(reader.subjects?.map((s) => s.name)).toEqual([pod]);
}

/** The Run's engine pod once annotated with it: the annotations come last in the pass that writes the status, so waited for. */
function waitForAnnounced(name: string, uid: string | undefined): Promise<Obj> {
  return waitFor(async () => {
    const [engine] = (await list("Pod", `leviath.dev/run=${name}`)).filter((p) => p.metadata?.labels?.["leviath.dev/component"] === "engine");
    return engine?.metadata?.annotations?.["leviath.dev/bound-run-uid"] === uid ? engine : undefined;
  }, { timeoutMs: 10_000, description: `the pool pod annotated with ${name}` });
}

/**
 * The Run's RoleBinding was written before its pod was annotated, so the pod's sidecar, which reads the Run with it as
 * soon as it sees the annotations, is not refused first. One API server over one etcd: resource versions order its
 * writes; nothing else writes the pod here (no kubelet runs).
 */
function expectWrittenBefore(binding: Obj, pod: Obj): void {
  expect(BigInt(pod.metadata?.resourceVersion ?? "0")).toBeGreaterThan(BigInt(binding.metadata?.resourceVersion ?? "0"));
}

/** An adopted pod is its Run's: labelled, annotated and owned by it, with its claim and account taken over. */
async function expectAdopted(run: Custom): Promise<void> {
  const name = run.metadata?.name ?? "";
  const pod = String(run.status?.["enginePod"]);
  expect(run.status?.["workspace"]).toBe(`${pod}-workspace`);
  const live = await waitForAnnounced(name, run.metadata?.uid);
  expect(live?.metadata?.name).toBe(pod);
  expect(live?.metadata?.labels).toMatchObject({ "leviath.dev/pool-state": "bound", "leviath.dev/run": name });
  expect(live?.metadata?.annotations).toMatchObject({ "leviath.dev/bound-run": name, "leviath.dev/bound-run-uid": run.metadata?.uid });
  expect(live?.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", name, uid: run.metadata?.uid, controller: true })]);
  // No engine pod of its own, no claim or account of its own: the pool pod's, taken over; its sandbox pod
  // mounts that claim.
  const pods = await waitFor(async () => {
    const found = await list("Pod", `leviath.dev/run=${name}`);
    return found.length === 2 ? found : undefined;
  }, { timeoutMs: 10_000, description: "the engine and sandbox pods" });
  const sandbox = pods.find((p) => p.metadata?.name !== pod) as Obj & { spec?: { volumes?: { persistentVolumeClaim?: { claimName: string } }[] } };
  expect(sandbox.metadata?.labels?.["leviath.dev/component"]).toBe("sandbox");
  expect(sandbox.spec?.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName).toBe(`${pod}-workspace`);
  const claims = await list("PersistentVolumeClaim", `leviath.dev/run=${name}`);
  expect(claims.map((c) => c.metadata?.name)).toEqual([`${pod}-workspace`]);
  expect(claims[0]!.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", uid: run.metadata?.uid, controller: true })]);
  const accounts = await list("ServiceAccount", `leviath.dev/run=${name}`);
  expect(accounts.map((a) => a.metadata?.name)).toEqual([pod]);
  const binding = await waitFor(async () => (await list("RoleBinding", `leviath.dev/run=${name}`, "rbac.authorization.k8s.io/v1")).find((b) => b.metadata?.name === `${name}-sidecar`), { timeoutMs: 10_000, description: "the Run's RoleBinding" });
  expectWrittenBefore(binding, live);
  expect(binding.subjects?.map((s) => s.name)).toEqual([pod]);
  await expectAnswersReadBy(name, pod);
}

/**
 * An adopted pod is the Run's engine pod like any other. Its agent exits 0 (as the kubelet reports it): the Run
 * succeeds, the pod (ended by itself) and its claim stay with the Run, its identity goes once the sandbox pod is gone.
 */
async function expectCompletion(finishing: Custom): Promise<void> {
  const ended = String(finishing.status?.["enginePod"]);
  await kubectl(["patch", "pod", ended, "-n", files.namespace, "--subresource", "status", "--type", "merge", "-p", JSON.stringify({
    status: { phase: "Succeeded", containerStatuses: [{ name: "agent", image: TEST_RUNTIME_IMAGE, imageID: "", ready: false, restartCount: 0, state: { terminated: { exitCode: 0, reason: "Completed" } } }] },
  })]);
  const succeeded = await waitForCustom("runs", files.namespace, finishing.metadata?.name ?? "", (r) => r.status?.["phase"] === "Succeeded", "the adopted Run to succeed");
  expect(succeeded.status?.["agentExit"]).toMatchObject({ exitCode: 0 });
  expect((await list("Pod", `leviath.dev/run=${finishing.metadata?.name}`)).map((p) => p.metadata?.name)).toContain(ended);
  // Its identity goes once its sandbox pod is gone, as a cold Run's does; its claim stays with the Run.
  await waitFor(async () => ((await list("ServiceAccount", `leviath.dev/run=${finishing.metadata?.name}`)).length === 0 ? true : undefined), { timeoutMs: 30_000, description: "the adopted pod's identity to go" });
  expect((await list("PersistentVolumeClaim", `leviath.dev/run=${finishing.metadata?.name}`)).map((c) => c.metadata?.name)).toEqual([`${ended}-workspace`]);
}

describe("a Run and a warm pool", () => {
  it("adopts a ready pod (one per Run when they race), starts cold on a miss, and the pool refills", async () => {
    // Its commands run in a sandbox pod: a pool pod never runs them itself.
    await createAgent(files.namespace, "notes", { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "container", image: "debian:bookworm-slim", network: false }, stages: [{ name: "main" }] });
    await applyPolicy({ pools: [{ agent: `${files.namespace}/notes`, size: 2 }] });
    const pool = await readyPool(2);
    for (const pod of pool) await markReady(pod);
    await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom;
      return p.status?.["poolsDisplay"] === "2/2" ? true : undefined;
    }, { timeoutMs: 30_000, description: "both pool pods ready on the policy's status" });

    // Three Runs at once for two pods: every pod goes to one Run, and the third starts cold.
    const runs = ["r1", "r2", "r3"];
    await Promise.all(runs.map((r) => createRun(files.namespace, r, { agentRef: { name: "notes" } })));
    const done = await Promise.all(runs.map(started));
    const warm = done.filter((r) => r.status?.["startedFrom"] === "pool");
    const cold = done.filter((r) => r.status?.["startedFrom"] === "cold");
    expect(warm).toHaveLength(2);
    expect(new Set(warm.map((r) => r.status?.["enginePod"]))).toEqual(new Set(pool));
    expect(cold).toHaveLength(1);
    expect(cold[0]!.status?.["enginePod"]).toBe(`${cold[0]!.metadata?.name}-engine`);
    expect(cold[0]!.status?.["workspace"]).toBe(`${cold[0]!.metadata?.name}-workspace`);

    for (const run of warm) await expectAdopted(run);

    // The pool refills behind the adoptions: two new unbound pods, none of them an adopted one.
    const refilled = await waitFor(async () => {
      const pods = await list("Pod", "leviath.dev/pool=notes,leviath.dev/pool-state=ready,leviath.dev/component=engine");
      return pods.length === 2 ? pods.map((p) => p.metadata?.name ?? "") : undefined;
    }, { timeoutMs: 30_000, description: "the pool to refill" });
    expect(refilled.some((p) => pool.includes(p))).toBe(false);

    // A Run the pool cannot serve (another workspace size) starts cold and is counted as a miss.
    await createRun(files.namespace, "big", { agentRef: { name: "notes" }, workspace: { size: "5Gi" } });
    expect((await started("big")).status?.["startedFrom"]).toBe("cold");
    const status = await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom;
      const pools = p.status?.["pools"] as { adoptions: number; misses: number }[] | undefined;
      return pools?.[0]?.misses === 2 ? pools[0] : undefined;
    }, { timeoutMs: 30_000, description: "the adoptions and misses on the policy's status" });
    expect(status).toMatchObject({ agent: `${files.namespace}/notes`, adoptions: 2, misses: 2 });
    const metrics = await files.metrics();
    expect(sample(metrics, "leviath_pool_adoptions_total")).toBe(2);
    expect(sample(metrics, 'leviath_pool_misses_total{reason="not-eligible"}')).toBe(1);
    expect(sample(metrics, 'leviath_pool_misses_total{reason="no-ready-pod"}') + sample(metrics, 'leviath_pool_misses_total{reason="claim-conflict"}')).toBe(1);
    expect(sample(metrics, 'leviath_pool_pods{state="starting"}')).toBe(2);
    // Not full yet: no time to refill is observed until the new pods are ready; then one per adoption.
    expect(sample(metrics, "leviath_pool_refill_seconds_count")).toBe(0);
    for (const p of refilled) await markReady(p);
    await waitFor(async () => (sample(await files.metrics(), "leviath_pool_refill_seconds_count") === 2 ? true : undefined), { timeoutMs: 30_000, description: "the two adoptions' times to refill" });

    const [finishing, stopping] = [warm[1]!, warm[0]!];
    await expectCompletion(finishing);

    // Cancelled, a Run deletes its adopted pod; it never returns to the pool.
    const adopted = String(stopping.status?.["enginePod"]);
    await patchCustom("runs", files.namespace, stopping.metadata?.name ?? "", { spec: { desiredState: "Cancelled" } });
    await waitFor(async () => ((await list("Pod", "leviath.dev/pool=notes")).some((p) => p.metadata?.name === adopted) ? undefined : true), { timeoutMs: 30_000, description: "the adopted pod to be deleted" });
    // The pod may go before the Run's status says why: the phase is waited for.
    const cancelled = await waitForCustom("runs", files.namespace, stopping.metadata?.name ?? "", (r) => r.status?.["phase"] !== "Pending" && r.status?.["phase"] !== "Running", "the cancelled Run's phase");
    expect(cancelled.status?.["phase"]).toBe("Cancelled");
  });
});
