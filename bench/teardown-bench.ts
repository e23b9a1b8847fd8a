// Suite `teardown` (DESIGN.md §7): Run terminal → its last sandbox pod gone, on the real node (kubelet,
// containerd, runc; test/e2e's harness). The operator runs in this process with the locally built images; each
// Run has one container sandbox (busybox, PID 1 as src/sandbox/pods.ts SANDBOX_PID1 makes it) and the scripted
// runtime, which either exits 0 at once (the Run ends Succeeded by itself) or waits for a prompt until the Run is
// cancelled. Timed from the first poll that sees the terminal phase to the first that no longer finds the
// sandbox pod (both every 50 ms, so each figure carries up to 50 ms of polling). Needs root, like test/e2e.
// Run with: node bench/teardown-bench.ts [--runs 20]
import { spawnSync } from "node:child_process";
import { mkdtempSync, chmodSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startOperator } from "../src/controller/operator.ts";
import { createKubeClient, loadKubeConfig } from "../src/kube/client.ts";
import { createLogger } from "../src/log/logger.ts";
import { DEFAULT_POD_SETTINGS } from "../src/sandbox/pod-settings.ts";
import { startNode } from "../test/e2e/harness/node.ts";
import { ROOT, numberFlag, SuiteRecord } from "./bench-results.ts";
import { printTable, summarize, type Row } from "./bench-stats.ts";
import { startBenchCluster, until } from "./controller-cluster.ts";

const NS = "bench-teardown";
const RUNS = numberFlag("runs", 20);
const say = (line: string) => process.stdout.write(`[teardown] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TERMINAL = new Set(["Succeeded", "Failed", "Cancelled"]);

if (process.getuid?.() !== 0) {
  process.stderr.write("teardown bench: needs root (it starts a real node, as test/e2e does)\n");
  process.exit(2);
}
for (const script of ["node-packages", "node-bin", "build-images"]) {
  const r = spawnSync("bash", [join(ROOT, "scripts", script)], { stdio: ["ignore", "ignore", "inherit"] });
  if (r.status !== 0) throw new Error(`scripts/${script} failed`);
}

const record = new SuiteRecord("teardown", { runs: RUNS });
const cluster = await startBenchCluster(NS, say);
const node = await startNode(cluster.cp, { log: (l) => say(`node: ${l}`) });
const { kube } = cluster;
const workspace = mkdtempSync(join(tmpdir(), "leviath-bench-ws-"));
chmodSync(workspace, 0o777);
const operator = await startOperator({
  client: createKubeClient(loadKubeConfig(cluster.cp.kubeconfigPath)),
  settings: { ...DEFAULT_POD_SETTINGS, sidecarImage: node.images["leviath-operator"]!, defaultRuntimeImage: node.images["leviath-runtime"]! },
  workers: 2,
  log: createLogger("warn"),
});

type RunStatus = { status?: { phase?: string } };
const samples: Record<"succeeded" | "cancelled", number[]> = { succeeded: [], cancelled: [] };
try {
  await kube.call("POST", "/api/v1/persistentvolumes", {
    apiVersion: "v1", kind: "PersistentVolume", metadata: { name: "bench-ws" },
    spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], storageClassName: "", hostPath: { path: workspace, type: "Directory" }, claimRef: { namespace: NS, name: "bench-ws" } },
  });
  await kube.call("POST", `/api/v1/namespaces/${NS}/persistentvolumeclaims`, {
    apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: "bench-ws" },
    spec: { accessModes: ["ReadWriteOnce"], storageClassName: "", volumeName: "bench-ws", resources: { requests: { storage: "1Gi" } } },
  });
  // Every Run works in the one pre-bound claim, one after another: the admin lists it (docs/controller.md, The workspace).
  await kube.call("POST", "/apis/leviath.dev/v1alpha1/leviathpolicies", {
    apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { ceilings: { workspaceClaims: [`${NS}/bench-ws`] } },
  });
  await kube.call("POST", `/apis/leviath.dev/v1alpha1/namespaces/${NS}/agents`, {
    apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "bench" },
    spec: { sandbox: { kind: "container", image: node.images.sandbox, network: true }, stages: [{ name: "main" }] },
  });
  for (let i = 0; i < RUNS; i++) {
    const kind = i % 2 === 0 ? "succeeded" : "cancelled";
    const name = `td-${i}`;
    const runtime = kind === "succeeded" ? { e2e: { scenario: "exit", exitCode: 0 } } : { e2e: { scenario: "wait", tool: "send_email" } };
    await kube.call("POST", `/apis/leviath.dev/v1alpha1/namespaces/${NS}/runs`, {
      apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name },
      spec: { agentRef: { name: "bench" }, workspace: { claimName: "bench-ws" }, runtime },
    });
    const runPath = `/apis/leviath.dev/v1alpha1/namespaces/${NS}/runs/${name}`;
    const sandboxPods = async () => (await kube.call<{ items: unknown[] }>("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=leviath.dev/run=${name},leviath.dev/component=sandbox`)).items.length;
    if (kind === "cancelled") {
      const allRunning = async () => {
        const pods = (await kube.call<{ items: { status?: { phase?: string } }[] }>("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=leviath.dev/run=${name}`)).items;
        return pods.length === 2 && pods.every((p) => p.status?.phase === "Running");
      };
      await until(allRunning, `${name}'s pods Running`, 120_000, 100);
      // Waiting for its prompt: a live Run, cancelled now.
      // A PUT of the whole object: the status moves under it, so a conflict is read again and retried.
      await until(async () => {
        const run = await kube.call<{ spec: Record<string, unknown> }>("GET", runPath);
        return (await kube.send("PUT", runPath, { ...run, spec: { ...run.spec, desiredState: "Cancelled" } })).status === 200;
      }, `${name} cancelled`, 30_000, 50);
    }
    let terminalAt = 0;
    await until(async () => {
      const phase = (await kube.call<RunStatus>("GET", runPath)).status?.phase;
      if (phase && TERMINAL.has(phase)) terminalAt = performance.now();
      return terminalAt > 0;
    }, `${name} terminal`, 120_000, 50);
    await until(async () => (await sandboxPods()) === 0, `${name}'s sandbox pod gone`, 120_000, 50);
    const ms = performance.now() - terminalAt;
    samples[kind].push(ms);
    say(`${name} (${kind}): sandbox pod gone ${ms.toFixed(0)} ms after the Run was terminal`);
    await kube.call("DELETE", runPath);
    await until(async () => (await kube.call<{ items: unknown[] }>("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=leviath.dev/run=${name}`)).items.length === 0, `${name}'s pods gone`, 120_000, 200);
    await sleep(200);
  }
  const toNs = (ms: number[]) => ms.map((m) => m * 1e6);
  const rows: Row[] = [
    { name: "Run Succeeded (agent exited 0) → sandbox pod gone", summary: summarize(toNs(samples.succeeded)), target: "p99 ≤ 5 s" },
    { name: "Run Cancelled (live) → sandbox pod gone", summary: summarize(toNs(samples.cancelled)), target: "p99 ≤ 5 s" },
    { name: "all", summary: summarize(toNs([...samples.succeeded, ...samples.cancelled])), target: "p99 ≤ 5 s" },
  ];
  printTable("Run terminal → last sandbox pod gone, real node (polled every 50 ms)", rows);
  record.add("Run terminal → last sandbox pod gone, real node", rows);
  record.extra["samplesMs"] = samples;
  record.write();
} finally {
  await operator.stop();
  await node.stop();
  await cluster.stop();
  rmSync(workspace, { recursive: true, force: true });
}
