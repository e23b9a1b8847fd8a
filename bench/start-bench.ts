// Suite `start` (issue 32): how long a Run takes to its first tool call, on the real node (kubelet, containerd,
// runc; test/e2e's harness) with `leviath controller` as a child process and the locally built images. Each Run
// is the smallest real one: one stage with a container sandbox (busybox), the scripted runtime's `first-call`
// scenario (one `shell true` executed in the sandbox pod over the exec API, then exit 0), so the Run ends
// Succeeded by itself. Per Run, from its creation (the bench's clock just before the POST):
//   engine pod created / scheduled, sandbox pod Ready, Run Succeeded: the arrival of the watch event that first
//     shows it (a push from the API server, not polling; sub-second, where the objects' own fields are seconds);
//   runtime started, sidecar healthy, first call answered: the runtime's own epoch-ms timestamps (same clock).
// Two modes: `--runs N` Runs one after another (each deleted and gone before the next), and `--burst N` created at
// `--rate R` per second (N is bounded by the node's 30 pods: each Run holds two). Both cold, then both warm: the
// policy declares a pool of `--pool P` engine pods for the Agent (the controller runs with --warm-pools), each
// warm Run created when the pool is full, the burst at most P Runs. `--tool list_dir` makes the first call one the
// sidecar answers alone (no sandbox pod waited for); the default, shell, runs in the sandbox pod. The baseline: as many bare pods (the sandbox image, the sandbox pods' restricted
// settings, no operator), one after another, created → Ready, timed by the same watch. The controller's and the API server's CPU seconds per Run are read from
// /proc over each mode. `--only warm` skips the baseline and the cold modes (one cold Run still warms the node up
// first); `--runtime-start at-binding` declares the pool's runtime started at its binding instead of with the pod
// (the default, with-pod: the scripted runtime is held on its binding, docs/runtime.md). Needs root, like test/e2e.
// Run with: npm run bench -- start [--runs 50] [--rate 5] [--only warm|cold]
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNode } from "../test/e2e/harness/node.ts";
import { buildSandboxPod } from "../test/e2e/harness/sandbox-pod.ts";
import type { BenchKube, WatchedObject } from "./bench-kube.ts";
import { flagValue, numberFlag, ROOT, SuiteRecord } from "./bench-results.ts";
import { printTable, summarize, type Row } from "./bench-stats.ts";
import { computeRequestsPerRun, readRequestCounts, type RequestCounts } from "./api-requests.ts";
import { provisionPoolClaims, setPool, waitForPool, watchPool } from "./start-warm.ts";
import { findChildPids, snapshotCpu, startBenchCluster, startControllerChild, until, type CpuSnapshot } from "./controller-cluster.ts";

const NS = "bench-start";
const RUNS = numberFlag("runs", 50);
const RATE = numberFlag("rate", 5);
/**
 * Runs created at RATE: the node here admits 30 pods (test/e2e's node), and each Run holds two at once (engine and
 * sandbox pod), so more than about 14 at once measure the node's pod limit, not a start.
 */
const BURST = numberFlag("burst", 12);
/** Warm: the pool's size, and so the largest warm burst (pool pods, the Runs' sandbox pods and the refills share the 30). */
const POOL = numberFlag("pool", 8);
const TOOL = flagValue("tool", "shell");
const ONLY = flagValue("only", "all");
if (ONLY !== "all" && ONLY !== "warm" && ONLY !== "cold") throw new Error("--only is warm or cold");
const RUNTIME_START = flagValue("runtime-start", "with-pod");
if (RUNTIME_START !== "with-pod" && RUNTIME_START !== "at-binding") throw new Error("--runtime-start is with-pod or at-binding");
if (TOOL !== "shell" && TOOL !== "list_dir") throw new Error("--tool is shell or list_dir");
const say = (line: string) => process.stdout.write(`[start] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** performance.now() as epoch ms, the runtime's clock (one machine). */
const epochMs = (perfMs: number) => performance.timeOrigin + perfMs;

/** The milestones of one Run, epoch ms. */
type Milestone = "created" | "enginePod" | "scheduled" | "sandboxReady" | "announced" | "runtimeStarted" | "runtimeBound" | "sidecarHealthy" | "firstCallAnswered" | "succeeded";
const PHASES: readonly { from: Milestone; to: Milestone; name: string }[] = [
  { from: "created", to: "enginePod", name: "Run created → engine pod created (controller)" },
  { from: "enginePod", to: "scheduled", name: "→ engine pod scheduled (scheduler)" },
  { from: "scheduled", to: "runtimeStarted", name: "→ runtime started (kubelet, sidecar start first)" },
  { from: "runtimeStarted", to: "sidecarHealthy", name: "→ sidecar healthy to the runtime" },
  { from: "sidecarHealthy", to: "firstCallAnswered", name: "→ first tool call answered (exec in the sandbox pod)" },
  { from: "firstCallAnswered", to: "succeeded", name: "→ Run Succeeded (runtime exit, controller)" },
];
/**
 * A warm Run's phases: its engine pod is adopted (already scheduled and running), and its runtime has its Run: started
 * at the binding (at-binding), or, started with the pod, handed its binding through LEVIATH_BINDING_FD (with-pod).
 */
const WARM_PHASES: typeof PHASES = [
  { from: "created", to: "enginePod", name: "Run created → pool pod adopted (controller)" },
  { from: "enginePod", to: "announced", name: "→ binding announced on the pod (controller: identity, Role, status, then the annotation)" },
  { from: "announced", to: "runtimeBound", name: "→ runtime has its Run (the pod's sidecar: its watch, the check, the Run's sidecar built, the hand-out, bound-exec)" },
  { from: "runtimeBound", to: "sidecarHealthy", name: "→ sidecar healthy to the runtime" },
  ...PHASES.slice(4),
];
const TOTALS: readonly { to: Milestone; name: string }[] = [
  { to: "scheduled", name: "Run created → engine pod scheduled" },
  { to: "sandboxReady", name: "Run created → sandbox pod Ready" },
  { to: "sidecarHealthy", name: "Run created → sidecar ready" },
  { to: "firstCallAnswered", name: "Run created → first tool call answered" },
  { to: "succeeded", name: "Run created → Succeeded" },
];

type PodWatched = WatchedObject & { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: { nodeName?: string }; status?: { conditions?: { type: string; status: string }[] } };
type RunWatched = WatchedObject & { status?: { phase?: string; message?: string; enginePod?: string; startedFrom?: string } };

if (process.getuid?.() !== 0) {
  process.stderr.write("start bench: needs root (it starts a real node, as test/e2e does)\n");
  process.exit(2);
}
// The images the node imports (pause, sandbox, leviath-operator, leviath-runtime): `demo` builds those and the
// provisioner's, not the MCP and client images this suite never runs.
for (const [script, ...args] of [["node-packages"], ["node-bin"], ["build-images", "demo"]]) {
  const r = spawnSync("bash", [join(ROOT, "scripts", script!), ...args], { stdio: ["ignore", "ignore", "inherit"] });
  if (r.status !== 0) throw new Error(`scripts/${script} failed`);
}

// A partial run (--only) is its own record: start.json stays the whole one.
const record = new SuiteRecord(ONLY === "all" ? "start" : `start-${ONLY}`, { runs: RUNS, rate: RATE, burst: BURST, pool: POOL, tool: TOOL, only: ONLY, runtimeStart: RUNTIME_START });
const cluster = await startBenchCluster(NS, say);
const node = await startNode(cluster.cp, { log: (l) => say(`node: ${l}`), images: ["leviath-operator", "leviath-runtime"] });
const { kube } = cluster;
const workDir = mkdtempSync(join(tmpdir(), "leviath-bench-start-"));
chmodSync(workDir, 0o777);
const controller = await startControllerChild(cluster.cp.kubeconfigPath, {
  workers: 4, nodeArgs: [], logDir: workDir, extraArgs: ["--warm-pools"], images: { sidecar: node.images["leviath-operator"]!, runtime: node.images["leviath-runtime"]! },
});
const seen = new Map<string, Partial<Record<Milestone, number>>>();
/** Bare pods: when each was created and first seen Ready (epoch ms). */
const bareCreated = new Map<string, number>();
const bareReady = new Map<string, number>();
/** Each Run's engine pod and where it came from (its status). */
const engines = new Map<string, { pod?: string; from?: string }>();
/** Runs that ended otherwise than Succeeded, with why: reported, never timed. */
const ended = new Map<string, string>();
const mark = (run: string | undefined, m: Milestone, at: number) => {
  if (!run) return;
  const s = seen.get(run) ?? {};
  s[m] ??= at;
  seen.set(run, s);
};
const watches = [
  kube.watch(`/api/v1/namespaces/${NS}/pods?labelSelector=leviath.dev/run`, (_type, obj, at) => {
    const pod = obj as PodWatched;
    const run = pod.metadata.labels?.["leviath.dev/run"];
    const ready = pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
    if (pod.metadata.labels?.["leviath.dev/component"] === "engine") {
      mark(run, "enginePod", epochMs(at));
      if (pod.spec?.nodeName) mark(run, "scheduled", epochMs(at));
      // A pool pod's binding, announced to its sidecar (the same watch event its sidecar acts on).
      if (pod.metadata.annotations?.["leviath.dev/bound-run"] === run) mark(run, "announced", epochMs(at));
    } else if (ready) {
      mark(run, "sandboxReady", epochMs(at));
    }
  }),
  kube.watch(`/api/v1/namespaces/${NS}/pods?labelSelector=leviath.dev/bench%3Dbare`, (_type, obj, at) => {
    const pod = obj as PodWatched;
    if (pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true) bareReady.set(pod.metadata.name, epochMs(at));
  }),
  kube.watch(`/apis/leviath.dev/v1alpha1/namespaces/${NS}/runs`, (_type, obj, at) => {
    const status = (obj as RunWatched).status;
    if (status?.enginePod) engines.set(obj.metadata.name, { pod: status.enginePod, from: status.startedFrom });
    if (status?.phase === "Succeeded") mark(obj.metadata.name, "succeeded", epochMs(at));
    else if (status?.phase === "Failed" || status?.phase === "Cancelled") ended.set(obj.metadata.name, `${status.phase}: ${status.message ?? ""}`);
  }),
];

/** The runtime's timing line, from the engine pod's log (the pod stays until the Run is deleted). */
async function readRuntimeTiming(kubeApi: BenchKube, run: string): Promise<void> {
  const res = await fetchLog(kubeApi, run);
  const line = res.split("\n").find((l) => l.includes('"first-call:timing"'));
  if (!line) throw new Error(`${run}: no timing line in the runtime's log:\n${res}`);
  const body = (JSON.parse(line) as { body: { startedAt: number; boundAt?: number; healthyAt: number; answeredAt: number; decision: string } }).body;
  if (body.decision !== "allow") throw new Error(`${run}: the first call was not allowed: ${line}`);
  mark(run, "runtimeStarted", body.startedAt);
  // Held on its binding, the runtime started with the pool pod: it has its Run when the binding came.
  mark(run, "runtimeBound", body.boundAt ?? body.startedAt);
  mark(run, "sidecarHealthy", body.healthyAt);
  mark(run, "firstCallAnswered", body.answeredAt);
}

function fetchLog(kubeApi: BenchKube, run: string): Promise<string> {
  return kubeApi.text(`/api/v1/namespaces/${NS}/pods/${engines.get(run)?.pod ?? `${run}-engine`}/log?container=agent`);
}

async function createRun(name: string): Promise<void> {
  const dir = join(workDir, name);
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  await kube.call("POST", "/api/v1/persistentvolumes", {
    apiVersion: "v1", kind: "PersistentVolume", metadata: { name: `${NS}-${name}` },
    spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], storageClassName: "", hostPath: { path: dir, type: "Directory" }, claimRef: { namespace: NS, name: `${name}-workspace` } },
  });
  mark(name, "created", Date.now());
  await kube.call("POST", `/apis/leviath.dev/v1alpha1/namespaces/${NS}/runs`, {
    apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name },
    spec: { agentRef: { name: "bench" }, task: "first call", runtime: { e2e: { scenario: "first-call", tool: TOOL } } },
  });
}

/** Waits for the Run to end; true when it Succeeded (its runtime's timing read), false when it ended otherwise. */
async function finish(name: string): Promise<boolean> {
  await until(() => seen.get(name)?.succeeded !== undefined || ended.has(name), `${name} to end`, 600_000, 100);
  if (ended.has(name)) {
    say(`${name} did not succeed: ${ended.get(name)}`);
    return false;
  }
  await readRuntimeTiming(kube, name);
  return true;
}

async function deleteRuns(names: readonly string[]): Promise<void> {
  for (const name of names) {
    await kube.send("DELETE", `/apis/leviath.dev/v1alpha1/namespaces/${NS}/runs/${name}`);
    await kube.send("DELETE", `/api/v1/persistentvolumes/${NS}-${name}`);
  }
  await until(async () => (await kube.call<{ items: unknown[] }>("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=leviath.dev/run`)).items.length === 0, "every pod gone", 300_000, 200);
}

/** Creates the Runs named at RATE per second, then waits for each to end. */
async function runBurst(names: readonly string[]): Promise<void> {
  const started = performance.now();
  for (const [i, name] of names.entries()) {
    await sleep(Math.max(0, started + (i * 1000) / RATE - performance.now()));
    await createRun(name);
  }
  for (const name of names) await finish(name);
}

/** One mode's rows: the totals, then each phase, over the Runs named (those that Succeeded). */
function report(title: string, all: readonly string[], cpu: Record<string, number>, phaseDefs = PHASES): void {
  const names = all.filter((n) => !ended.has(n));
  // A warm Run that missed the pool started cold: said, and not counted as warm.
  const cold = phaseDefs === WARM_PHASES ? all.filter((n) => engines.get(n)?.from !== "pool") : [];
  if (cold.length > 0) say(`${title}: ${cold.length} of ${all.length} Runs missed the pool and started cold (${cold.join(", ")})`);
  if (cold.length > 0) names.splice(0, names.length, ...names.filter((n) => !cold.includes(n)));
  if (names.length < all.length) say(`${title}: ${all.length - names.length} of ${all.length} Runs did not succeed and are not timed`);
  const ms = (name: string, a: Milestone, b: Milestone) => {
    const s = seen.get(name)!;
    return s[a] !== undefined && s[b] !== undefined ? s[b]! - s[a]! : NaN;
  };
  const rows = (defs: readonly { from: Milestone; to: Milestone; name: string }[]): Row[] => defs.map((d) => ({
    name: d.name, summary: summarize(names.map((n) => ms(n, d.from, d.to) * 1e6).filter((v) => Number.isFinite(v))),
  }));
  const totals = rows(TOTALS.map((t) => ({ from: "created" as const, ...t })));
  const phases = rows(phaseDefs);
  const cpuNote = `CPU seconds per Run: controller ${cpu["controller"]!.toFixed(3)}, kube-apiserver ${cpu["kube-apiserver"]!.toFixed(3)}, etcd ${cpu["etcd"]!.toFixed(3)}`;
  printTable(`${title}: from the Run's creation`, totals);
  printTable(`${title}: each phase`, phases);
  say(cpuNote);
  record.add(`${title}: from the Run's creation`, totals);
  record.add(`${title}: each phase`, phases);
  (record.extra["notSucceeded"] ??= {} as Record<string, unknown>);
  (record.extra["notSucceeded"] as Record<string, unknown>)[title] = Object.fromEntries(all.filter((n) => ended.has(n)).map((n) => [n, ended.get(n)]));
  (record.extra["cpuSecondsPerRun"] ??= {} as Record<string, unknown>);
  (record.extra["cpuSecondsPerRun"] as Record<string, unknown>)[title] = cpu;
}

/** The API server's requests per Run over a mode (its own count), the writes summed. */
function reportRequests(title: string, before: RequestCounts, after: RequestCounts, runs: number): void {
  const { perRun, writesPerRun } = computeRequestsPerRun(before, after, runs);
  say(`${title}: kube-apiserver requests per Run: ${writesPerRun} writes; ${Object.entries(perRun).slice(0, 24).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  (record.extra["apiRequestsPerRun"] ??= {} as Record<string, unknown>);
  (record.extra["apiRequestsPerRun"] as Record<string, unknown>)[title] = { writesPerRun, perRun };
}

function cpuPerRun(before: CpuSnapshot, after: CpuSnapshot, runs: number): Record<string, number> {
  const per: Record<string, number> = {};
  for (const name of Object.keys(after.processes)) per[name] = (after.processes[name]! - (before.processes[name] ?? 0)) / runs;
  return per;
}

let cleaning: Promise<void> | undefined;
const cleanUp = () => (cleaning ??= (async () => {
  for (const w of watches) w.stop();
  await controller.stop();
  await node.stop();
  await cluster.stop();
  rmSync(workDir, { recursive: true, force: true });
})());
// Interrupted (Ctrl-C, a timeout's SIGTERM): the controller child, the node and the control plane go too.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void cleanUp().finally(() => process.exit(130)));

try {
  // Upstream's default for shell is ask: the admin allows it, so the one call runs without a person.
  await kube.call("POST", "/apis/leviath.dev/v1alpha1/leviathpolicies", {
    apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { toolPermissions: { shell: "allow" } },
  });
  await kube.call("POST", `/apis/leviath.dev/v1alpha1/namespaces/${NS}/agents`, {
    apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "bench" },
    spec: { sandbox: { kind: "container", image: node.images.sandbox, network: true }, toolPermissions: { shell: "allow" }, stages: [{ name: "main" }] },
  });
  const pids = { ...findChildPids(), controller: controller.pid };
  // One Run first, not counted: the kubelet's first pod start pays for what later ones share.
  const requestsBeforeWarmup = await readRequestCounts(kube);
  await createRun("warmup");
  await finish("warmup");
  await deleteRuns(["warmup"]);
  // Its requests, for a cold Run's count beside the warm ones' (one Run, its deletion included).
  reportRequests("cold, the warm-up Run", requestsBeforeWarmup, await readRequestCounts(kube), 1);

  const bare = ONLY === "warm" ? [] : Array.from({ length: RUNS }, (_, i) => `bare-${i}`);
  for (const name of bare) {
    const pod = buildSandboxPod({ name, namespace: NS, image: node.images.sandbox!, labels: { "leviath.dev/bench": "bare" } });
    bareCreated.set(name, Date.now());
    await kube.call("POST", `/api/v1/namespaces/${NS}/pods`, pod);
    await until(() => bareReady.has(name), `${name} Ready`, 120_000, 50);
    await kube.call("DELETE", `/api/v1/namespaces/${NS}/pods/${name}`);
    await until(async () => (await kube.send("GET", `/api/v1/namespaces/${NS}/pods/${name}`)).status === 404, `${name} gone`, 120_000, 100);
  }
  if (ONLY !== "warm") {
    const bareRows: Row[] = [{ name: "bare pod created → Ready (no operator)", summary: summarize(bare.map((n) => (bareReady.get(n)! - bareCreated.get(n)!) * 1e6)) }];
    printTable("baseline: a bare pod, one after another", bareRows);
    record.add("baseline: a bare pod, one after another", bareRows);

    const sequential = Array.from({ length: RUNS }, (_, i) => `seq-${i}`);
    const before = snapshotCpu(pids);
    for (const name of sequential) {
      await createRun(name);
      if (await finish(name)) say(`${name}: first call answered ${(seen.get(name)!.firstCallAnswered! - seen.get(name)!.created!).toFixed(0)} ms after creation`);
      await deleteRuns([name]);
      await sleep(200);
    }
    report("sequential", sequential, cpuPerRun(before, snapshotCpu(pids), RUNS));

    const burst = Array.from({ length: BURST }, (_, i) => `burst-${i}`);
    const beforeBurst = snapshotCpu(pids);
    await runBurst(burst);
    report(`${BURST} at ${RATE}/s`, burst, cpuPerRun(beforeBurst, snapshotCpu(pids), BURST));
    await deleteRuns(burst);
  }
  if (ONLY !== "cold") {
    // Warm: the same Runs, each created while the pool holds POOL ready pods.
    const claims = provisionPoolClaims(kube, NS, workDir);
    const pool = watchPool(kube, NS, "bench");
    watches.push(claims, pool);
    await setPool(kube, NS, "bench", POOL, RUNTIME_START);
    const warmSequential = Array.from({ length: RUNS }, (_, i) => `warm-seq-${i}`);
    let before = snapshotCpu(pids);
    const requestsBefore = await readRequestCounts(kube);
    for (const name of warmSequential) {
      await waitForPool(pool, POOL);
      await createRun(name);
      if (await finish(name)) say(`${name} (${engines.get(name)?.from}): first call answered ${(seen.get(name)!.firstCallAnswered! - seen.get(name)!.created!).toFixed(0)} ms after creation`);
      await deleteRuns([name]);
    }
    report("warm, sequential", warmSequential, cpuPerRun(before, snapshotCpu(pids), RUNS), WARM_PHASES);
    reportRequests("warm, sequential", requestsBefore, await readRequestCounts(kube), RUNS);
    const warmBurst = Array.from({ length: Math.min(BURST, POOL) }, (_, i) => `warm-burst-${i}`);
    await waitForPool(pool, POOL);
    before = snapshotCpu(pids);
    await runBurst(warmBurst);
    report(`warm, ${warmBurst.length} at ${RATE}/s`, warmBurst, cpuPerRun(before, snapshotCpu(pids), warmBurst.length), WARM_PHASES);
    await deleteRuns(warmBurst);
    await setPool(kube, NS, "bench", 0);
  }
  record.extra["milestonesMs"] = Object.fromEntries(seen);
  record.extra["engines"] = Object.fromEntries(engines);
  record.extra["controllerProblems"] = controller.problems;
  record.write();
} finally {
  await cleanUp();
}
