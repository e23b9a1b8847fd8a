// `leviath controller` as real processes: killed in the middle of reconciling and restarted, it leaves exactly one
// set of children per Run; two of them never both hold the lease, and a graceful stop hands the lease over.
import { spawnSync } from "node:child_process";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "../harness/index.ts";
import { childrenOf, createAgent, createRun, readCustom, TEST_RUNTIME_IMAGE } from "./operator-harness.ts";
import { startControllerProcess, waitForStarted, type ControllerProcess } from "./process-harness.ts";

let namespace = "";
const running: ControllerProcess[] = [];

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("process");
});

afterEach(async () => {
  for (const p of running.splice(0)) {
    if (p.child.exitCode === null) p.child.kill("SIGKILL");
    await p.exited;
  }
});

afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});

function start(args: string[]): ControllerProcess {
  const p = startControllerProcess(args);
  running.push(p);
  return p;
}

const RUNS = 24;
const CHILDREN_PER_RUN = 9;

// Each test starts two or three controller processes; each took over 30 s to start on a loaded two-core machine.
describe("the controller process", { timeout: 420_000 }, () => {
  it("killed in the middle of reconciling and restarted, leaves exactly one set of children per Run", async () => {
    await createAgent(namespace, "many", {
      image: "r:1",
      sandbox: { kind: "container", image: "alpine:3", network: false },
      stages: [{ name: "a" }, { name: "b", sandbox: { kind: "container", image: "node:22-slim" } }],
    });
    const first = start(["--workers", "1", "--runtime-image", TEST_RUNTIME_IMAGE]);
    await waitForStarted(first);
    const started = first.logs.find((l) => l["msg"] === "controller started") as { addresses: { probes: string; metrics: string } };
    expect((await fetch(`http://${started.addresses.probes}/readyz`)).status).toBe(200);
    expect((await fetch(`http://${started.addresses.probes}/healthz`)).status).toBe(200);
    const exposition = await (await fetch(`http://${started.addresses.metrics}/metrics`)).text();
    for (const name of ["controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_time_seconds_bucket", "workqueue_depth", "leader_election_master_status"]) {
      expect(exposition).toContain(`${name}{`);
    }
    const promtool = spawnSync("promtool", ["check", "metrics"], { input: exposition, encoding: "utf8" });
    expect(promtool.error, "promtool must be installed").toBeUndefined();
    expect(`${promtool.stdout}${promtool.stderr}`).toBe("");
    expect(promtool.status).toBe(0);
    const names = Array.from({ length: RUNS }, (_, i) => `job-${i}`);
    await Promise.all(names.map((n) => createRun(namespace, n, { agentRef: { name: "many" } })));

    const { core } = testCluster();
    const count = async () => (await core.listNamespacedPod({ namespace, labelSelector: "app.kubernetes.io/managed-by=leviath-operator" })).items.length;
    await waitFor(async () => (await count()) > 0, { intervalMs: 20, description: "the first child pod" });
    first.child.kill("SIGKILL");
    expect(await first.exited).toBeNull();
    const podsAtKill = await count();
    expect(podsAtKill).toBeLessThan(RUNS * 3);

    const second = start(["--workers", "4", "--runtime-image", TEST_RUNTIME_IMAGE]);
    await waitForStarted(second);
    await waitFor(async () => {
      const all = await Promise.all(names.map((n) => childrenOf(namespace, n)));
      return all.every((c) => c.length >= CHILDREN_PER_RUN);
    }, { timeoutMs: 90_000, intervalMs: 500, description: "every Run's children" });
    await new Promise((r) => setTimeout(r, 1000));
    for (const n of names) {
      const refs = (await childrenOf(namespace, n)).map((c) => c.ref);
      expect(refs.length, n).toBe(CHILDREN_PER_RUN);
      expect(new Set(refs).size).toBe(CHILDREN_PER_RUN);
      expect(refs.filter((r) => r.startsWith(`Pod/${n}-sbx-`))).toHaveLength(2);
      const run = await readCustom("runs", namespace, n);
      expect(run.status?.agent, n).toEqual({ name: "many", generation: 1 });
    }
    expect(await count()).toBe(RUNS * 3);
    expect((await core.listNamespacedConfigMap({ namespace, labelSelector: "leviath.dev/component=run-policy" })).items).toHaveLength(RUNS);

    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("never lets two processes hold the lease, and hands it over on a graceful stop", async () => {
    const lease = ["--leader-elect", "--leader-election-namespace", namespace, "--leader-election-id", "leviath-test", "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5"];
    const a = start(lease);
    const b = start(lease);
    await Promise.all([waitForStarted(a), waitForStarted(b)]);

    let both = 0;
    let polling = true;
    const watcher = (async () => {
      while (polling) {
        const statuses = await Promise.all(running.map((p) => p.leaderStatus()));
        if (statuses.filter((st) => st === 1).length > 1) both++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const leader = await waitFor(async () => {
      const [sa, sb] = await Promise.all([a.leaderStatus(), b.leaderStatus()]);
      return sa === 1 ? a : sb === 1 ? b : undefined;
    }, { timeoutMs: 20_000, description: "one leader" });
    const follower = leader === a ? b : a;
    await new Promise((r) => setTimeout(r, 3000));
    expect(await follower.leaderStatus()).toBe(0);

    const { objects } = testCluster();
    const readLease = async () => (await objects.read({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: "leviath-test", namespace } })) as { spec: { holderIdentity?: string; leaseTransitions?: number } };
    const holder = (await readLease()).spec.holderIdentity;
    const acquired = leader.logs.find((l) => l["msg"] === "acquired the lease") as { identity?: string } | undefined;
    expect(holder).toBe(acquired?.identity);

    const stoppedAt = Date.now();
    leader.child.kill("SIGTERM");
    expect(await leader.exited).toBe(0);
    expect(leader.logs.some((l) => l["msg"] === "released the lease")).toBe(true);
    await waitFor(async () => (await follower.leaderStatus()) === 1, { timeoutMs: 10_000, intervalMs: 50, description: "the follower to take over" });
    // Released, not expired: the follower needed no full lease duration (4 s) to take over.
    expect(Date.now() - stoppedAt).toBeLessThan(3500);
    const after = await readLease();
    expect(after.spec.holderIdentity).not.toBe(holder);
    expect(after.spec.leaseTransitions).toBeGreaterThanOrEqual(1);

    // A leader that dies without releasing keeps the lease until it expires: a newcomer waits a lease duration.
    const c = start(lease);
    await waitForStarted(c);
    const killedAt = Date.now();
    follower.child.kill("SIGKILL");
    await follower.exited;
    await waitFor(async () => (await c.leaderStatus()) === 1, { timeoutMs: 20_000, intervalMs: 50, description: "the newcomer to take over an expired lease" });
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(3500);

    polling = false;
    await watcher;
    expect(both).toBe(0);
  });
});
