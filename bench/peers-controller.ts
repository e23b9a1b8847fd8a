// The controller half of the peers suite: `leviath controller` and agent-sandbox's controller (controller-runtime)
// side by side against one real API server. Batches of Runs and of Sandboxes are created at a fixed rate and take
// turns (the order flips each repetition); each batch records created → first Pod and → all children, the API
// server's own POST latency from its metrics, and the CPU of each process, so our cost and the shared server's
// can be told apart.
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, readdirSync } from "node:fs";
import { join } from "node:path";
import { findBinary } from "../test/integration/harness/control-plane.ts";
import { ROOT } from "./bench-results.ts";
import { summarize, type LatencySummary } from "./bench-stats.ts";
import { buildCompiledCli, findChildPids, parseMetrics, readCpuSeconds, readRssKiB, scrapeMetrics, startBenchCluster, startControllerChild, sumSeries, until, waitForQuiet, waitForValidAgent, type Scrape } from "./controller-cluster.ts";
import { BENCH_AGENT as AGENT, BENCH_POLICY as POLICY, buildRun, ChildTracker, createAtRate, runNames, runsPath } from "./controller-load.ts";
import { printProfileTop } from "./cpu-profile-top.ts";
import type { PeerBinaries } from "./peers-bin.ts";

const NS = "bench";
const SANDBOXES = `/apis/agents.x-k8s.io/v1alpha1/namespaces/${NS}/sandboxes`;

/** A Sandbox whose pod passes Pod Security `restricted` (the namespace enforces it, as for our pods). */
function buildSandbox(name: string): Record<string, unknown> {
  return {
    apiVersion: "agents.x-k8s.io/v1alpha1", kind: "Sandbox", metadata: { name },
    spec: {
      podTemplate: {
        spec: {
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } },
          containers: [{ name: "sandbox", image: "debian:bookworm-slim", command: ["sleep", "infinity"], securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } } }],
        },
      },
    },
  };
}

/** One batch of one controller. */
export interface ControllerBatch {
  readonly controller: "leviath" | "agent-sandbox";
  readonly rep: number;
  readonly objects: number;
  readonly childrenPerObject: number;
  readonly incomplete: number;
  readonly firstPod: LatencySummary;
  readonly allChildren: LatencySummary;
  /** Client-observed POST of the Run or Sandbox. */
  readonly createPost: LatencySummary;
  /** The API server's own mean POST latency per resource during the batch (apiserver_request_duration_seconds), ms. */
  readonly apiServerPostMeanMs: Record<string, number>;
  /**
   * Every request the API server answered during the batch (WATCH aside), by verb and resource (`APPLY pods`,
   * `APPLY runs/status`, `POST events`): how many, and its own mean latency in ms (apiserver_request_duration_seconds).
   */
  readonly apiServerRequests: Record<string, { count: number; meanMs: number }>;
  /** CPU seconds each process used from the first create until 3 s after the last object was complete. */
  readonly cpuSeconds: Record<string, number>;
  /**
   * Ours only: the Run work queue over the batch (its own metrics): passes, and the mean time a Run waited in the
   * queue before a worker took it and the mean pass, in ms; what the first Pod waits for besides the API server.
   */
  readonly runQueue?: { passes: number; meanWaitMs: number; meanPassMs: number };
}

/** The Run queue's passes, mean wait and mean pass between two scrapes of our controller's /metrics. */
function runQueueOf(before: Scrape, after: Scrape): NonNullable<ControllerBatch["runQueue"]> {
  const d = (name: string) => sumSeries(after, name, 'name="run"') - sumSeries(before, name, 'name="run"');
  const passes = d("workqueue_work_duration_seconds_count");
  const mean = (name: string) => (passes > 0 ? Math.round((1e6 * d(`${name}_sum`)) / d(`${name}_count`)) / 1000 : 0);
  return { passes, meanWaitMs: mean("workqueue_queue_duration_seconds"), meanPassMs: mean("workqueue_work_duration_seconds") };
}

/** Memory of both controllers at one point. */
export interface ControllerMemory {
  readonly when: string;
  readonly objectsEach: number;
  readonly rssMiB: Record<string, number>;
}

const POST_RESOURCES = ["runs", "sandboxes", "pods", "services", "configmaps", "serviceaccounts", "roles", "rolebindings", "networkpolicies", "persistentvolumeclaims"];

function apiServerPostMeans(before: Scrape, after: Scrape): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of POST_RESOURCES) {
    const d = (n: string) => sumSeries(after, n, 'verb="POST"', `resource="${r}"`) - sumSeries(before, n, 'verb="POST"', `resource="${r}"`);
    const count = d("apiserver_request_duration_seconds_count");
    if (count > 0) out[r] = Math.round((1e6 * d("apiserver_request_duration_seconds_sum")) / count) / 1000;
  }
  return out;
}

const REQUEST_LABELS = /(verb|resource|subresource)="([^"]*)"/g;

function apiServerRequests(before: Scrape, after: Scrape): ControllerBatch["apiServerRequests"] {
  const sums = new Map<string, { count: number; sum: number }>();
  for (const [key, value] of after) {
    const part = key.startsWith("apiserver_request_duration_seconds_count{") ? "count" : key.startsWith("apiserver_request_duration_seconds_sum{") ? "sum" : undefined;
    if (part === undefined) continue;
    const labels = Object.fromEntries([...key.matchAll(REQUEST_LABELS)].map((m) => [m[1], m[2]]));
    if (labels["verb"] === "WATCH") continue;
    const name = `${labels["verb"]} ${labels["resource"]}${labels["subresource"] ? `/${labels["subresource"]}` : ""}`;
    const entry = sums.get(name) ?? { count: 0, sum: 0 };
    entry[part] += value - (before.get(key) ?? 0);
    sums.set(name, entry);
  }
  const out: ControllerBatch["apiServerRequests"] = {};
  for (const [name, e] of [...sums].sort(([a], [b]) => a.localeCompare(b))) if (e.count > 0) out[name] = { count: e.count, meanMs: Math.round((1e6 * e.sum) / e.count) / 1000 };
  return out;
}

/** Starts agent-sandbox's controller against the kubeconfig, with as many workers as ours and no leader election. */
function startAgentSandbox(bin: string, kubeconfig: string, workers: number, logPath: string) {
  const log = createWriteStream(logPath);
  const child = spawn(bin, ["--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0", `--sandbox-concurrent-workers=${workers}`], {
    stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { pid: child.pid!, exited: () => child.exitCode !== null, stop: async () => (child.kill("SIGTERM"), await exited, log.end()) };
}

/** Runs the controller comparison: `reps` repetitions of `count` objects each at `rate`/s. */
export async function runControllerPeers(peers: PeerBinaries, opts: { reps: number; count: number; rate: number; workers: number; workDir: string; profile: boolean; source: boolean; controllerNodeArgs: string[]; log: (line: string) => void }): Promise<{ batches: ControllerBatch[]; memory: ControllerMemory[]; profileTop?: unknown }> {
  const cluster = await startBenchCluster(NS, opts.log);
  const { kube } = cluster;
  const kubectl = findBinary("kubectl", cluster.cp.binDir)!;
  const applied = spawnSync(kubectl, ["--kubeconfig", cluster.cp.kubeconfigPath, "apply", "--server-side", "-f", peers.sandboxCrd], { encoding: "utf8", cwd: ROOT });
  if (applied.status !== 0) throw new Error(`applying agent-sandbox's CRD: ${applied.stderr}`);
  spawnSync(kubectl, ["--kubeconfig", cluster.cp.kubeconfigPath, "wait", "--for=condition=Established", "--timeout=60s", "crd/sandboxes.agents.x-k8s.io"], { stdio: "ignore" });
  const runs = new ChildTracker(kube, NS);
  const sandboxes = new ChildTracker(kube, NS, { ownerKind: "Sandbox", paths: ["/api/v1/namespaces/{ns}/pods", "/api/v1/namespaces/{ns}/services"] });
  const profileDir = join(opts.workDir, "profile");
  // Ours as its image runs it (the compiled CLI), unless --source.
  const entry = opts.source ? {} : { entry: buildCompiledCli() };
  const ours = await startControllerChild(cluster.cp.kubeconfigPath, { workers: opts.workers, logDir: opts.workDir, nodeArgs: [...opts.controllerNodeArgs, ...(opts.profile ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [])], ...entry });
  const theirs = startAgentSandbox(peers.agentSandbox, cluster.cp.kubeconfigPath, opts.workers, join(opts.workDir, "agent-sandbox.log"));
  const shared = findChildPids();
  const pids: Record<string, number> = { leviath: ours.pid, "agent-sandbox": theirs.pid, "kube-apiserver": shared["kube-apiserver"]!, etcd: shared["etcd"]! };
  opts.log(`pids ${JSON.stringify(pids)}`);
  const batches: ControllerBatch[] = [];
  const memory: ControllerMemory[] = [];
  const rss = () => Object.fromEntries(["leviath", "agent-sandbox"].map((n) => [n, Math.round(readRssKiB(pids[n]!).rss / 1024)]));
  try {
    await kube.call("POST", "/apis/leviath.dev/v1alpha1/leviathpolicies", { apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: POLICY });
    await kube.call("POST", `/apis/leviath.dev/v1alpha1/namespaces/${NS}/agents`, { apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "notes" }, spec: AGENT });
    await waitForValidAgent(kube, NS, "notes");
    // A warm-up object each: how many children one has (the count stops changing), and warm controllers.
    for (const [tracker, path, build] of [[runs, runsPath(NS), (n: string) => buildRun(n, "notes")], [sandboxes, SANDBOXES, buildSandbox]] as const) {
      await createAtRate(kube, path, ["warmup"], build, 1);
      let stable = 0;
      let last = -1;
      await until(() => {
        const n = tracker.count.get("warmup") ?? 0;
        stable = n > 0 && n === last ? stable + 1 : 0;
        last = n;
        return stable >= 10;
      }, `the warm-up ${path}'s children`, 60_000, 200);
      tracker.expected = last;
    }
    opts.log(`children per object: Run ${runs.expected}, Sandbox ${sandboxes.expected}`);
    memory.push({ when: "one object each", objectsEach: 1, rssMiB: rss() });

    const batch = async (which: ControllerBatch["controller"], rep: number) => {
      const [tracker, path, build, prefix] = which === "leviath" ? [runs, runsPath(NS), (n: string) => buildRun(n, "notes"), "run"] as const : [sandboxes, SANDBOXES, buildSandbox, "sbx"] as const;
      const names = runNames(`${prefix}${rep}`, opts.count);
      const metricsBefore = parseMetrics(await kube.text("/metrics"));
      const oursBefore = which === "leviath" ? await scrapeMetrics(ours.metricsUrl) : undefined;
      const cpuBefore = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, readCpuSeconds(pid)]));
      const created = await createAtRate(kube, path, names, build, opts.rate);
      await until(() => tracker.completed(names) === names.length, `${which}: every object's children`, 120_000, 100).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 3000));
      const cpuSeconds = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, Math.round((readCpuSeconds(pid) - cpuBefore[n]!) * 100) / 100]));
      const metricsAfter = parseMetrics(await kube.text("/metrics"));
      const runQueue = oursBefore ? runQueueOf(oursBefore, await scrapeMetrics(ours.metricsUrl)) : undefined;
      const since = (at: Map<string, number>) => created.filter((c) => at.has(c.name)).map((c) => (at.get(c.name)! - c.createdAt) * 1e6);
      const b: ControllerBatch = {
        controller: which, rep, objects: names.length, childrenPerObject: tracker.expected, incomplete: names.length - tracker.completed(names),
        firstPod: summarize(since(tracker.firstPodAt)), allChildren: summarize(since(tracker.doneAt)),
        createPost: summarize(created.map((c) => (c.createdAt - c.sentAt) * 1e6)), apiServerPostMeanMs: apiServerPostMeans(metricsBefore, metricsAfter),
        apiServerRequests: apiServerRequests(metricsBefore, metricsAfter), cpuSeconds, ...(runQueue ? { runQueue } : {}),
      };
      batches.push(b);
      opts.log(`rep ${rep + 1}: ${which}: first Pod p50 ${(b.firstPod.p50 / 1000).toFixed(1)} ms p99 ${(b.firstPod.p99 / 1000).toFixed(1)} ms; all ${b.childrenPerObject} children p50 ${(b.allChildren.p50 / 1000).toFixed(1)} ms p99 ${(b.allChildren.p99 / 1000).toFixed(1)} ms; CPU ${JSON.stringify(cpuSeconds)}; ${b.incomplete} incomplete`);
    };
    for (let rep = 0; rep < opts.reps; rep++) {
      const order: ControllerBatch["controller"][] = rep % 2 === 0 ? ["agent-sandbox", "leviath"] : ["leviath", "agent-sandbox"];
      for (const which of order) await batch(which, rep);
      // RSS once our controller is quiet; on a saturated machine it may not get there, and the sample says so.
      const quiet = await waitForQuiet(ours.metricsUrl, 2000, 120_000).then(() => true, () => false);
      memory.push({ when: `after repetition ${rep + 1}${quiet ? "" : " (not quiet after 2 min)"}`, objectsEach: 1 + (rep + 1) * opts.count, rssMiB: rss() });
    }
    if (theirs.exited()) throw new Error("agent-sandbox's controller exited during the run; its log is in the work dir");
  } finally {
    runs.stop();
    sandboxes.stop();
    await theirs.stop();
    await ours.stop();
    await cluster.stop();
  }
  // Our controller's CPU profile over the whole run (written when it exits), when asked for.
  return { batches, memory, ...(opts.profile ? { profileTop: printProfileTop(readdirSync(profileDir).map((f) => join(profileDir, f))) } : {}) };
}
