// Suite `controller` (DESIGN.md §7, rows four to six): `leviath controller` as a child process against the real
// API server. Runs are created at 20/s (100, then 1,000) and timed from created to all children created; then the
// cache is filled with Runs whose Agent is missing (no children) to 5,000 and 10,000 Runs, with the controller's
// RSS sampled at each size and 100 more Runs timed at each, which gives the curve of latency against Runs cached.
// Last, 1,000 Runs created at once (as fast as the API server takes them) give the throughput.
// Run with: node bench/controller-bench.ts [--rate 20] [--small 100] [--big 1000] [--mid 5000] [--cached 10000] [--burst 1000]
//                                          [--workers 4] [--profile] [--keep] [--controller-node-args "..."] [--variant NAME]
//                                          [--compiled] (the compiled CLI the image ships, not the TypeScript sources)
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { flagValue, numberFlag, SuiteRecord } from "./bench-results.ts";
import { printTable, summarize, type Row } from "./bench-stats.ts";
import { buildCompiledCli, findChildPids, startBenchCluster, startControllerChild, until, waitForQuiet, waitForValidAgent } from "./controller-cluster.ts";
import { BENCH_AGENT as AGENT, BENCH_POLICY as POLICY, ChildTracker, createRunsAtRate, createRunsInParallel, runNames } from "./controller-load.ts";
import { measureBatch, measureCachedJson, printBatchTable, printCpuTable, printMemoryTable, sampleMemory, type BatchResult, type MemorySample } from "./controller-report.ts";
import { printProfileTop } from "./cpu-profile-top.ts";

const NS = "bench";

const opts = {
  rate: numberFlag("rate", 20), small: numberFlag("small", 100), big: numberFlag("big", 1000), mid: numberFlag("mid", 5000),
  cached: numberFlag("cached", 10_000), workers: numberFlag("workers", 4), burst: Number(flagValue("burst", "1000")), profile: process.argv.includes("--profile"),
  /** Extra node flags for the controller, e.g. `--max-old-space-size=128` (what V8 derives from a 512 MiB cgroup limit). */
  controllerNodeArgs: flagValue("controller-node-args", "").split(" ").filter(Boolean),
  compiled: process.argv.includes("--compiled"),
};
const say = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
// A variant (e.g. `--variant chart-heap` with the chart's heap flags) writes controller-<variant>.json beside the default.
const variant = flagValue("variant", "");
const record = new SuiteRecord(variant ? `controller-${variant}` : "controller", opts);
const workDir = mkdtempSync(join(tmpdir(), "leviath-bench-controller-"));
const cluster = await startBenchCluster(NS, say);
const { kube } = cluster;
const tracker = new ChildTracker(kube, NS);
const profileDir = join(workDir, "profile");
const controller = await startControllerChild(cluster.cp.kubeconfigPath, {
  workers: opts.workers, logDir: workDir, nodeArgs: [...opts.controllerNodeArgs, ...(opts.profile ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [])],
  ...(opts.compiled ? { entry: buildCompiledCli() } : {}),
});
say(`controller pid ${controller.pid}, log ${controller.logPath}`);
const pids = { controller: controller.pid, ...Object.fromEntries(Object.entries(findChildPids()).filter(([name, pid]) => name !== "bash" && pid !== controller.pid)) };

const batches: BatchResult[] = [];
const memory: MemorySample[] = [];
let runsInCluster = 0;
let cachedJson: Awaited<ReturnType<typeof measureCachedJson>> = {};
try {
  await kube.call("POST", "/apis/leviath.dev/v1alpha1/leviathpolicies", { apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: POLICY });
  await kube.call("POST", `/apis/leviath.dev/v1alpha1/namespaces/${NS}/agents`, { apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "notes" }, spec: AGENT });
  await waitForValidAgent(kube, NS, "notes");

  // One Run first: how many children a Run of this Agent has (the count stops changing), and a warm controller.
  await createRunsAtRate(kube, NS, ["warmup"], "notes", 1);
  runsInCluster = 1;
  let stable = 0;
  let lastCount = -1;
  await until(() => {
    const n = tracker.count.get("warmup") ?? 0;
    stable = n > 0 && n === lastCount ? stable + 1 : 0;
    lastCount = n;
    return stable >= 10;
  }, "the warm-up Run's children", 60_000, 200);
  tracker.expected = lastCount;
  say(`a Run of this Agent has ${tracker.expected} children`);

  const timed = async (label: string, prefix: string, count: number, burst = false) => {
    say(`${label}: creating ${count} Runs ${burst ? "at once (50 in flight)" : `at ${opts.rate}/s`} with ${runsInCluster} Runs in the cluster`);
    const create = (names: string[]) => (burst ? createRunsInParallel(kube, NS, names, "notes", 50) : createRunsAtRate(kube, NS, names, "notes", opts.rate));
    const result = await measureBatch({ label, names: runNames(prefix, count), cachedBefore: runsInCluster, kube, ns: NS, tracker, controller, timeoutMs: 300_000, pids, create });
    runsInCluster += count;
    batches.push(result);
    say(`${label}: p50 ${result.latency.p50.toFixed(0)} ms, p99 ${result.latency.p99.toFixed(0)} ms, total ${result.totalSeconds.toFixed(1)} s, ${result.incomplete} incomplete`);
  };
  const fillTo = async (target: number) => {
    const count = target - runsInCluster;
    if (count <= 0) return;
    say(`filling: ${count} Runs whose Agent is missing, 50 requests in flight`);
    const started = performance.now();
    await createRunsInParallel(kube, NS, runNames("idle", count, runsInCluster), "absent", 50);
    const seconds = (performance.now() - started) / 1000;
    runsInCluster = target;
    say(`filled in ${seconds.toFixed(1)} s (${(count / seconds).toFixed(0)} Runs/s); waiting for the controller to go quiet`);
    await waitForQuiet(controller.metricsUrl, 3000, 300_000);
  };
  const sample = async (label: string) => {
    const m = await sampleMemory(label, runsInCluster, [...tracker.count.values()].reduce((a, b) => a + b, 0), controller);
    memory.push(m);
    say(`memory with ${m.runs} Runs and ${m.children} children: RSS ${m.rssMiB.toFixed(0)} MiB (max ${m.rssMaxMiB.toFixed(0)}), heap used ${m.heapUsedMiB.toFixed(0)} MiB`);
  };

  await sample("idle, one Run");
  await timed(`${opts.small} Runs`, "small", opts.small);
  await timed(`${opts.big} Runs`, "big", opts.big);
  await sample(`after the ${opts.big}-Run batch`);
  await fillTo(opts.mid);
  await sample(`${opts.mid} Runs cached`);
  await timed(`${opts.small} Runs, ${opts.mid} cached`, "mid", opts.small);
  await fillTo(opts.cached);
  await sample(`${opts.cached} Runs cached`);
  await timed(`${opts.small} Runs, ${opts.cached} cached`, "full", opts.small);
  if (opts.burst > 0) await timed(`${opts.burst} Runs at once`, "burst", opts.burst, true);
  cachedJson = await measureCachedJson(kube, NS);
} finally {
  tracker.stop();
  const code = await controller.stop();
  say(`controller stopped (exit ${code}); ${controller.problems.length} warnings or errors logged`);
  await cluster.stop();
}

const latencyRows: Row[] = batches.map((b) => ({
  name: `${b.label}${b.label.includes("at once") ? "" : ` at ${opts.rate}/s`} (${b.cachedBefore.toLocaleString("en-US")} Runs before)`,
  summary: summarize(b.latenciesNs), target: b.label.includes("at once") ? "all within 60 s" : "p99 ≤ 500 ms",
  note: `total ${b.totalSeconds.toFixed(1)} s, ${b.tailSeconds.toFixed(1)} s after the last create; ${b.incomplete} incomplete`,
}));
printTable(`Run created → all ${tracker.expected} children created (watch arrival)`, latencyRows);
record.add("Run created → all children created", latencyRows);
const createRows: Row[] = batches.map((b) => ({ name: `POST Run: ${b.label}`, summary: summarize(b.createNs), target: "Kubernetes SLO p99 ≤ 1 s" }));
printTable("API server: create a Run (client-observed)", createRows);
record.add("API server: create a Run", createRows);
printBatchTable(batches);
printCpuTable(batches);
printMemoryTable(memory);
process.stdout.write(`\nWhat the API server holds and what the cache keeps of it, as JSON: ${Object.entries(cachedJson).map(([k, v]) => `${v.objects} ${k} ${v.jsonMiB.toFixed(1)} MiB served (managedFields ${v.managedFieldsMiB.toFixed(1)} MiB), ${v.cachedMiB.toFixed(1)} MiB cached`).join("; ")}\n`);
record.extra["cachedJson"] = cachedJson;
record.extra["childrenPerRun"] = tracker.expected;
record.extra["batches"] = batches.map(({ latenciesNs: _l, createNs: _c, ...rest }) => rest);
record.extra["memory"] = memory;
record.extra["controllerProblems"] = controller.problems.slice(0, 10);
if (opts.profile) record.extra["profileTop"] = printProfileTop(readdirSync(profileDir).map((f) => join(profileDir, f)));
record.write();
// The controller's log stays for a failed run (this line is not reached) or when asked for; so do profiles.
if (opts.profile || process.argv.includes("--keep")) say(`kept ${workDir}`);
else rmSync(workDir, { recursive: true, force: true });
