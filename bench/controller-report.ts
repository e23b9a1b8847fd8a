// One timed batch of Runs against the running controller, what it cost the controller (reconcile passes, their
// duration from the controller's own histogram, API writes, CPU), memory samples, and the tables for them.
import { readdirSync } from "node:fs";
import type { BenchKube } from "./bench-kube.ts";
import { formatMicros } from "./bench-stats.ts";
import { computeCpuShares, readCpuSeconds, readRssKiB, scrapeMetrics, snapshotCpu, sumSeries, until, waitForQuiet, type ControllerChild, type Scrape } from "./controller-cluster.ts";
import type { ChildTracker, CreatedRun } from "./controller-load.ts";
import { buildCacheTransforms } from "../src/controller/cached-fields.ts";
import { stripLastApplied, stripManagedFields } from "../src/kube/informer.ts";
import type { KubeObject } from "../src/kube/objects.ts";
import type { ResourceName } from "../src/kube/resources.ts";

/** What one batch measured. */
export interface BatchResult {
  readonly label: string;
  readonly runs: number;
  readonly cachedBefore: number;
  /** Created → all children created, per completed Run (ns, for `summarize`). */
  readonly latenciesNs: Float64Array;
  /** Latency summary in ms. */
  readonly latency: { p50: number; p99: number; max: number };
  /** The POSTs' own latency (ns). */
  readonly createNs: Float64Array;
  /** First POST sent → last Run complete. */
  readonly totalSeconds: number;
  /** Last POST answered → last Run complete. */
  readonly tailSeconds: number;
  readonly incomplete: number;
  /** Run reconcile passes in the batch, and their duration from the controller's histogram. */
  readonly passes: number;
  readonly reconcileMeanMs: number;
  /** Upper bounds of the histogram buckets holding the 50th and 99th percentile pass. */
  readonly reconcileP50BucketMs: number;
  readonly reconcileP99BucketMs: number;
  readonly writes: number;
  readonly errors: number;
  readonly controllerCpuSeconds: number;
  /** Where the machine's CPU went while the Runs were created and completed (% of one core; `others` is other work on the machine). */
  readonly cpu: Record<string, number>;
  /** Each Run's latency in ms, in the order they were created (null: not complete by the timeout). */
  readonly series: (number | null)[];
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

function bucketQuantile(before: Scrape, after: Scrape, q: number): number {
  const name = "controller_runtime_reconcile_time_seconds_bucket";
  const count = (s: Scrape, le: string) => sumSeries(s, name, 'controller="run"', `le="${le}"`);
  const total = count(after, "+Inf") - count(before, "+Inf");
  for (const le of BUCKETS) if (count(after, String(le)) - count(before, String(le)) >= q * total) return le * 1000;
  return Infinity;
}

/** Creates `names` at `rate`, waits for their children (or the timeout) and for the controller to go quiet. */
export async function measureBatch(args: {
  label: string; names: string[]; cachedBefore: number; kube: BenchKube; ns: string; tracker: ChildTracker; controller: ControllerChild; timeoutMs: number;
  pids: Record<string, number>;
  /** Creates the Runs: at a fixed rate, or all at once. */
  create: (names: string[]) => Promise<CreatedRun[]>;
}): Promise<BatchResult> {
  const { names, tracker, controller } = args;
  const before = await scrapeMetrics(controller.metricsUrl);
  const cpuBefore = readCpuSeconds(controller.pid);
  const machineBefore = snapshotCpu(args.pids);
  const created = await args.create(names);
  await until(() => tracker.completed(names) === names.length, `${args.label}: every Run's children`, args.timeoutMs, 100).catch(() => undefined);
  const cpu = computeCpuShares(machineBefore, snapshotCpu(args.pids));
  await waitForQuiet(controller.metricsUrl, 2000, 120_000);
  const after = await scrapeMetrics(controller.metricsUrl);
  const done = created.filter((c) => tracker.doneAt.has(c.name));
  const latenciesNs = Float64Array.from(done.map((c) => (tracker.doneAt.get(c.name)! - c.createdAt) * 1e6));
  const sorted = Float64Array.from(latenciesNs).sort();
  const pick = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! / 1e6 : NaN);
  const lastDone = Math.max(...done.map((c) => tracker.doneAt.get(c.name)!));
  const delta = (name: string, ...m: string[]) => sumSeries(after, name, ...m) - sumSeries(before, name, ...m);
  const passes = delta("controller_runtime_reconcile_total", 'controller="run"');
  return {
    label: args.label, runs: names.length, cachedBefore: args.cachedBefore, latenciesNs,
    latency: { p50: pick(0.5), p99: pick(0.99), max: pick(1) },
    createNs: Float64Array.from(created.map((c) => (c.createdAt - c.sentAt) * 1e6)),
    totalSeconds: (lastDone - created[0]!.sentAt) / 1000,
    tailSeconds: (lastDone - Math.max(...created.map((c) => c.createdAt))) / 1000,
    incomplete: names.length - done.length,
    passes,
    reconcileMeanMs: (1000 * delta("controller_runtime_reconcile_time_seconds_sum", 'controller="run"')) / Math.max(1, passes),
    reconcileP50BucketMs: bucketQuantile(before, after, 0.5),
    reconcileP99BucketMs: bucketQuantile(before, after, 0.99),
    writes: delta("leviath_api_writes_total"),
    errors: delta("controller_runtime_reconcile_errors_total"),
    controllerCpuSeconds: readCpuSeconds(controller.pid) - cpuBefore,
    cpu,
    series: created.map((c) => (tracker.doneAt.has(c.name) ? Math.round(tracker.doneAt.get(c.name)! - c.createdAt) : null)),
  };
}

/** The controller's memory at one cache size. */
export interface MemorySample {
  readonly label: string;
  readonly runs: number;
  readonly children: number;
  readonly rssMiB: number;
  readonly rssMaxMiB: number;
  /** Of the RSS: anonymous memory (heaps, malloc) and mapped files (the node binary's pages, shared libraries). */
  readonly anonMiB: number;
  readonly fileMiB: number;
  readonly heapUsedMiB: number;
  readonly heapTotalMiB: number;
  readonly externalMiB: number;
  /** Open file descriptors (sockets included) of the controller. */
  readonly openFds: number;
}

/** Five VmRSS samples a second apart once the controller is quiet: their median and maximum. */
export async function sampleMemory(label: string, runs: number, children: number, controller: ControllerChild): Promise<MemorySample> {
  await waitForQuiet(controller.metricsUrl, 3000, 300_000);
  const samples: ReturnType<typeof readRssKiB>[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(readRssKiB(controller.pid));
    await new Promise((r) => setTimeout(r, 1000));
  }
  samples.sort((a, b) => a.rss - b.rss);
  const median = samples[2]!;
  const m = await scrapeMetrics(controller.metricsUrl);
  const mib = (bytes: number) => bytes / 2 ** 20;
  return {
    label, runs, children, rssMiB: median.rss / 1024, rssMaxMiB: samples[4]!.rss / 1024, anonMiB: median.anon / 1024, fileMiB: median.file / 1024,
    heapUsedMiB: mib(sumSeries(m, "nodejs_heap_size_used_bytes")), heapTotalMiB: mib(sumSeries(m, "nodejs_heap_size_total_bytes")),
    externalMiB: mib(sumSeries(m, "nodejs_external_memory_bytes")), openFds: readdirSync(`/proc/${controller.pid}/fd`).length,
  };
}

/** Prints what each batch cost the controller. */
export function printBatchTable(batches: readonly BatchResult[]): void {
  process.stdout.write("\n### What each batch cost the controller\n\n| Batch | Runs before | reconcile passes per Run | pass mean | pass p50 ≤ | pass p99 ≤ | API writes per Run | errors | controller CPU per Run |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const b of batches) {
    process.stdout.write(`| ${b.label} | ${b.cachedBefore.toLocaleString("en-US")} | ${(b.passes / b.runs).toFixed(1)} | ${formatMicros(b.reconcileMeanMs * 1000)} | ${b.reconcileP50BucketMs} ms | ${b.reconcileP99BucketMs} ms | ${(b.writes / b.runs).toFixed(1)} | ${b.errors} | ${((1000 * b.controllerCpuSeconds) / b.runs).toFixed(1)} ms |\n`);
  }
}

/** Prints where the CPU went during each batch. */
export function printCpuTable(batches: readonly BatchResult[]): void {
  const names = [...new Set(batches.flatMap((b) => Object.keys(b.cpu)))];
  process.stdout.write(`\n### CPU during each batch (% of one core, so two busy cores are 200 %)\n\n| Batch | ${names.join(" | ")} |\n|---|${names.map(() => "---").join("|")}|\n`);
  for (const b of batches) process.stdout.write(`| ${b.label} | ${names.map((n) => `${b.cpu[n] ?? ""} %`).join(" | ")} |\n`);
}

/** Prints the memory samples. */
export function printMemoryTable(samples: readonly MemorySample[]): void {
  process.stdout.write("\n### Controller memory (VmRSS once quiet; median of 5 samples)\n\n| When | Runs cached | children cached | RSS | RSS max | anon / file | V8 heap used / total | external | open fds | target |\n|---|---|---|---|---|---|---|---|---|---|\n");
  const f = (n: number) => n.toFixed(0);
  for (const m of samples) {
    process.stdout.write(`| ${m.label} | ${m.runs.toLocaleString("en-US")} | ${m.children.toLocaleString("en-US")} | ${f(m.rssMiB)} MiB | ${f(m.rssMaxMiB)} MiB | ${f(m.anonMiB)} / ${f(m.fileMiB)} MiB | ${f(m.heapUsedMiB)} / ${f(m.heapTotalMiB)} MiB | ${f(m.externalMiB)} MiB | ${m.openFds} | ${m.runs >= 10_000 ? "≤ 256 MiB" : ""} |\n`);
  }
}

/** The size of what the controller caches, as JSON: per kind, the objects and the managedFields it strips. */
export async function measureCachedJson(kube: BenchKube, ns: string): Promise<Record<string, { objects: number; jsonMiB: number; managedFieldsMiB: number; cachedMiB: number }>> {
  const kinds: Record<string, [string, ResourceName]> = {
    runs: [`/apis/leviath.dev/v1alpha1/namespaces/${ns}/runs`, "run"],
    pods: [`/api/v1/namespaces/${ns}/pods`, "pod"],
    configmaps: [`/api/v1/namespaces/${ns}/configmaps`, "configMap"],
  };
  // What the controller's informers keep of each (cached-fields.ts), as JSON; shared texts count once.
  const transforms = buildCacheTransforms();
  const out: Record<string, { objects: number; jsonMiB: number; managedFieldsMiB: number; cachedMiB: number }> = {};
  for (const [kind, [path, resource]] of Object.entries(kinds)) {
    const list = await kube.call<{ items: KubeObject[] }>("GET", path);
    let json = 0;
    let managed = 0;
    let cached = 0;
    const texts = new Set<string>();
    for (const item of list.items) {
      json += JSON.stringify(item).length;
      managed += JSON.stringify(item.metadata.managedFields ?? []).length;
      const kept = (transforms[resource] ?? ((o: KubeObject) => o))(stripLastApplied(stripManagedFields(item)));
      const data = kept["data"] as Record<string, string> | undefined;
      cached += JSON.stringify({ ...kept, data: undefined }).length;
      for (const text of Object.values(data ?? {})) {
        if (texts.has(text)) continue;
        texts.add(text);
        cached += text.length;
      }
    }
    out[kind] = { objects: list.items.length, jsonMiB: json / 2 ** 20, managedFieldsMiB: managed / 2 ** 20, cachedMiB: cached / 2 ** 20 };
  }
  return out;
}
