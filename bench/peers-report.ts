// The `peers` suite's tables, printed from its record (bench/results/peers.json): by the suite at the end of a run,
// and by `npm run bench -- peers --report FILE [--before FILE]` from a record kept earlier, without building or
// running anything. With `--before`, every ratio row shows the earlier record's ratio next to this one's, so a
// before/after table in docs/benchmarks.md comes from two records rather than by hand. The record is checked by zod
// first: a record that lacks a field the tables read is refused, naming the field.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { formatMicros, formatRate } from "./bench-stats.ts";

const latency = z.object({ n: z.number(), p50: z.number(), p90: z.number(), p99: z.number(), p999: z.number(), max: z.number() });
const load = latency.extend({ perSecond: z.number(), non2xx: z.number(), errors: z.number() });
const controllerName = z.enum(["leviath", "agent-sandbox"]);

/** What the tables read of a `peers` record. */
export const PeersRecordSchema = z.object({
  suite: z.enum(["peers", "peers-controller", "peers-sidecar"]),
  startedAt: z.string(),
  durationSeconds: z.number(),
  load: z.object({ before: z.array(z.number()), after: z.array(z.number()) }),
  options: z.object({
    reps: z.number().int().positive(), count: z.number().int().positive(), rate: z.number().positive(),
    source: z.boolean().default(false), defaultHeap: z.boolean().default(false), opaVersion: z.string(), agentSandboxVersion: z.string(), sidecarNodeOptions: z.string().optional(),
    controllerNodeArgs: z.array(z.string()).optional(),
  }),
  controller: z.object({
    batches: z.array(z.object({
      controller: controllerName, rep: z.number().int().nonnegative(), objects: z.number().int().positive(),
      childrenPerObject: z.number().int().positive(), incomplete: z.number().int().nonnegative(),
      firstPod: latency, allChildren: latency, createPost: latency,
      apiServerPostMeanMs: z.record(z.string(), z.number()), cpuSeconds: z.record(z.string(), z.number()),
      apiServerRequests: z.record(z.string(), z.object({ count: z.number(), meanMs: z.number() })).optional(),
      runQueue: z.object({ passes: z.number(), meanWaitMs: z.number(), meanPassMs: z.number() }).optional(),
    })).min(2),
    memory: z.array(z.object({ when: z.string(), objectsEach: z.number().int().positive(), rssMiB: z.record(z.string(), z.number()) })).min(1),
  }).optional(),
  sidecar: z.object({
    pinned: z.boolean(),
    samples: z.array(z.object({
      name: z.string(), call: z.string(), side: z.enum(["ours", "OPA", "floor"]), rep: z.number().int().nonnegative(),
      atRate: load, flatOut: load, peakRssMiB: z.number(),
    })).min(1),
  }).optional(),
}).refine((r) => r.controller !== undefined || r.sidecar !== undefined, { message: "a peers record holds a controller half, a sidecar half or both" });

/** A `peers` record, as the tables read it. */
export type PeersRecord = z.infer<typeof PeersRecordSchema>;
type Batch = NonNullable<PeersRecord["controller"]>["batches"][number];
type Sample = NonNullable<PeersRecord["sidecar"]>["samples"][number];

/** Reads and checks a record; the error names the file and the first field that is wrong. */
export function readPeersRecord(file: string): PeersRecord {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new Error(`peers: cannot read ${file}: ${(err as Error).message}`);
  }
  const parsed = PeersRecordSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`peers: ${file} is not a peers record: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  return parsed.data;
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const ms = (n: number) => `${n.toFixed(2)} ms`;

/** The controller half's figures, each as [agent-sandbox, leviath]. */
function controllerFigures(c: NonNullable<PeersRecord["controller"]>) {
  const med = (who: Batch["controller"], f: (b: Batch) => number) => median(c.batches.filter((b) => b.controller === who).map(f));
  const both = (f: (b: Batch) => number) => [med("agent-sandbox", f), med("leviath", f)] as const;
  const cpu = (proc: (who: Batch["controller"]) => string, per: "object" | "child") => (["agent-sandbox", "leviath"] as const).map((who) =>
    med(who, (b) => (1000 * (b.cpuSeconds[proc(who)] ?? NaN)) / (b.objects * (per === "child" ? b.childrenPerObject : 1)))) as unknown as readonly [number, number];
  return {
    children: both((b) => b.childrenPerObject), firstP50: both((b) => b.firstPod.p50), firstP99: both((b) => b.firstPod.p99),
    allP50: both((b) => b.allChildren.p50), allP99: both((b) => b.allChildren.p99), post: both((b) => b.createPost.p50),
    cpuObject: cpu((who) => who, "object"), cpuChild: cpu((who) => who, "child"),
    apiserver: cpu(() => "kube-apiserver", "object"), etcd: cpu(() => "etcd", "object"),
    postMean: [med("agent-sandbox", (b) => b.apiServerPostMeanMs["sandboxes"] ?? NaN), med("leviath", (b) => b.apiServerPostMeanMs["runs"] ?? NaN)] as const,
  };
}

/** The controllers' table (and, with `before`, each ratio next to the earlier record's). */
export function formatControllerReport(record: PeersRecord, before?: PeersRecord): string {
  const c = record.controller;
  if (!c) return "";
  const now = controllerFigures(c);
  const then = before?.controller ? controllerFigures(before.controller) : undefined;
  const o = record.options;
  const heap = o.controllerNodeArgs === undefined ? "" : o.controllerNodeArgs.length === 0 ? "; leviath at Node's default heap" : `; leviath with ${o.controllerNodeArgs.join(" ")}`;
  let s = `\n### Controllers at ${o.rate}/s, ${o.count} objects a batch, median of ${o.reps} repetitions (leviath: Run; agent-sandbox ${o.agentSandboxVersion}: Sandbox)${heap}\n\n`;
  s += then ? "| | agent-sandbox | leviath | ratio | ratio before | goal |\n|---|---|---|---|---|---|\n" : "| | agent-sandbox | leviath | ratio | goal |\n|---|---|---|---|---|\n";
  const row = (name: string, key: keyof typeof now, fmt: (n: number) => string, goal = "") => {
    const [a, l] = now[key];
    const prev = then ? ` ${ratio(then[key][1], then[key][0])} |` : "";
    s += `| ${name} | ${fmt(a)} | ${fmt(l)} | ${ratio(l, a)} |${prev} ${goal} |\n`;
  };
  row("children per object", "children", String);
  row("created → first Pod, p50", "firstP50", formatMicros, "≤ 2×");
  row("created → first Pod, p99", "firstP99", formatMicros, "≤ 3×");
  row("created → all children, p50", "allP50", formatMicros);
  row("created → all children, p99", "allP99", formatMicros);
  row("POST of the object (client-observed), p50", "post", formatMicros);
  row("controller CPU per object", "cpuObject", ms);
  row("controller CPU per child written", "cpuChild", ms, "≤ 1×");
  row("kube-apiserver CPU per object (during its batch)", "apiserver", ms);
  row("etcd CPU per object (during its batch)", "etcd", ms);
  row("API server's own POST mean: the object", "postMean", ms);
  for (const m of c.memory) {
    const prev = before?.controller?.memory.find((p) => p.objectsEach === m.objectsEach);
    const prevCell = then ? ` ${prev ? ratio(prev.rssMiB["leviath"]!, prev.rssMiB["agent-sandbox"]!) : ""} |` : "";
    s += `| RSS, ${m.when} (${m.objectsEach} objects each) | ${m.rssMiB["agent-sandbox"]} MiB | ${m.rssMiB["leviath"]} MiB | ${ratio(m.rssMiB["leviath"]!, m.rssMiB["agent-sandbox"]!)} |${prevCell} ${m.objectsEach >= 200 && m.objectsEach < 400 ? "≤ 2×" : ""} |\n`;
  }
  s += "\nPer repetition (first Pod p50 / p99, all children p50 / p99):\n\n";
  for (const b of c.batches) {
    const queue = b.runQueue ? `; Run queue: ${(b.runQueue.passes / b.objects).toFixed(2)} passes per Run, mean wait ${b.runQueue.meanWaitMs.toFixed(1)} ms, mean pass ${b.runQueue.meanPassMs.toFixed(1)} ms` : "";
    s += `- rep ${b.rep + 1} ${b.controller}: ${formatMicros(b.firstPod.p50)} / ${formatMicros(b.firstPod.p99)}, ${formatMicros(b.allChildren.p50)} / ${formatMicros(b.allChildren.p99)}; ${b.incomplete} incomplete; API server POST means ${JSON.stringify(b.apiServerPostMeanMs)} ms${queue}\n`;
  }
  if (c.batches.some((b) => b.apiServerRequests)) {
    s += "\nThe API server's requests per object during each batch (WATCH aside), and its own mean latency for each:\n\n";
    for (const b of c.batches) {
      const requests = Object.entries(b.apiServerRequests ?? {}).filter(([, r]) => r.count / b.objects >= 0.05);
      s += `- rep ${b.rep + 1} ${b.controller}: ${requests.map(([name, r]) => `${name} ${(r.count / b.objects).toFixed(2)} × ${r.meanMs.toFixed(1)} ms`).join(", ")}\n`;
    }
  }
  return s;
}

/** The decisions' tables (and, with `before`, each ratio next to the earlier record's). */
export function formatSidecarReport(record: PeersRecord, before?: PeersRecord): string {
  const sc = record.sidecar;
  if (!sc) return "";
  const o = record.options;
  const names = [...new Set(sc.samples.map((x) => x.name))];
  const medOf = (samples: readonly Sample[], name: string, f: (x: Sample) => number) => median(samples.filter((x) => x.name === name).map(f));
  const med = (name: string, f: (x: Sample) => number) => medOf(sc.samples, name, f);
  let s = `\n### Decisions over loopback HTTP, server pinned to one core, median of ${o.reps} repetitions; the sidecar ${o.source ? "from the sources" : "compiled (dist/, as the image ships it)"}; ours and the fastify floor with ${o.defaultHeap ? "Node's default heap" : `the sidecar container's NODE_OPTIONS${o.sidecarNodeOptions ? ` (${o.sidecarNodeOptions})` : ""}`}\n\n`;
  s += "| Server and call | 1,000/s p50 | p99 | p99.9 | flat out (16 connections), calls/s | peak RSS |\n|---|---|---|---|---|---|\n";
  for (const n of names) s += `| ${n} | ${formatMicros(med(n, (x) => x.atRate.p50))} | ${formatMicros(med(n, (x) => x.atRate.p99))} | ${formatMicros(med(n, (x) => x.atRate.p999))} | ${formatRate(med(n, (x) => x.flatOut.perSecond))} | ${med(n, (x) => x.peakRssMiB).toFixed(0)} MiB |\n`;
  const find = (samples: readonly Sample[], side: string, call: string) => samples.find((x) => x.side === side && x.call === call)?.name;
  const ratios = (samples: readonly Sample[], call: string, f: (x: Sample) => number) => {
    const [ours, opa] = [find(samples, "ours", call), find(samples, "OPA", call)];
    return ours && opa ? ratio(medOf(samples, ours, f), medOf(samples, opa, f)) : "";
  };
  const columns: [string, (x: Sample) => number][] = [["p50", (x) => x.atRate.p50], ["p99", (x) => x.atRate.p99], ["p99.9", (x) => x.atRate.p999], ["flat out (higher is better)", (x) => x.flatOut.perSecond], ["peak RSS", (x) => x.peakRssMiB]];
  s += `\n| Ratio, ours / OPA | ${columns.map(([h]) => h).join(" | ")} |\n|---|${columns.map(() => "---").join("|")}|\n`;
  for (const call of ["read_file", "http_post"]) {
    if (before?.sidecar) s += `| ${call}, before | ${columns.map(([, f]) => ratios(before.sidecar!.samples, call, f)).join(" | ")} |\n`;
    s += `| ${call}${before?.sidecar ? ", after" : ""} | ${columns.map(([, f]) => ratios(sc.samples, call, f)).join(" | ")} |\n`;
  }
  const floorRatio = (samples: readonly Sample[], side: string, floor: string) => {
    const server = find(samples, side, "http_post");
    const f = [...new Set(samples.map((x) => x.name))].find((n) => n.includes(floor));
    return server && f ? ratio(medOf(samples, server, (x) => x.atRate.p50), medOf(samples, f, (x) => x.atRate.p50)) : "n/a";
  };
  const was = (side: string, floor: string) => (before?.sidecar ? ` (before: ${floorRatio(before.sidecar.samples, side, floor)})` : "");
  s += `\nFloors: sidecar http_post p50 is ${floorRatio(sc.samples, "ours", "fastify")} the fastify floor's${was("ours", "fastify")} (goal ≤ 1.5×); OPA http_post p50 is ${floorRatio(sc.samples, "OPA", "Go net/http")} the Go floor's${was("OPA", "Go net/http")}.\n`;
  return s;
}

/** `min–max (median)` of ratios, as `1.23×`. */
function spread(ratios: readonly number[]): string {
  if (ratios.length === 0) return "n/a";
  const x = (n: number) => `${n.toFixed(2)}×`;
  return `${x(Math.min(...ratios))}–${x(Math.max(...ratios))} (median ${x(median(ratios))})`;
}

/**
 * Issue 32's restatement of the peer goals, judged per repetition so the spread shows: each repetition's leviath
 * batch against the agent-sandbox batch of the same repetition; the sidecar's p99.9 at 1,000/s against the fastify
 * floor (the same POST /v1/tool-calls route shape, tools aside) of the same repetition; the peak RSS of each.
 */
export function formatRestatedGoals(record: PeersRecord): string {
  const lines: string[] = [];
  const c = record.controller;
  if (c) {
    const reps = [...new Set(c.batches.map((b) => b.rep))].sort((a, b) => a - b);
    const pair = (f: (b: Batch) => number) => reps.flatMap((rep) => {
      const [ours, theirs] = (["leviath", "agent-sandbox"] as const).map((who) => c.batches.find((b) => b.rep === rep && b.controller === who));
      return ours && theirs ? [f(ours) / f(theirs)] : [];
    });
    lines.push(`| Run → first Pod p50 vs Sandbox → Pod | ≤ 2× | ${spread(pair((b) => b.firstPod.p50))} |`);
    lines.push(`| Run → first Pod p99 vs Sandbox → Pod | ≤ 3× | ${spread(pair((b) => b.firstPod.p99))} |`);
    const rss = c.memory.filter((m) => m.objectsEach > 1).map((m) => m.rssMiB["leviath"]! / m.rssMiB["agent-sandbox"]!);
    lines.push(`| controller RSS vs agent-sandbox's (after each repetition) | ≤ 2× | ${spread(rss)} |`);
  }
  const sc = record.sidecar;
  if (sc) {
    const floor = sc.samples.filter((x) => x.side === "floor" && x.name.includes("fastify"));
    for (const call of ["read_file", "http_post"]) {
      const ours = sc.samples.filter((x) => x.side === "ours" && x.call === call);
      const ratios = ours.flatMap((x) => {
        const f = floor.find((y) => y.rep === x.rep);
        return f ? [x.atRate.p999 / f.atRate.p999] : [];
      });
      lines.push(`| sidecar ${call} p99.9 at 1,000/s vs the fastify floor's | ≤ 1.2× | ${spread(ratios)} |`);
    }
    const peaks = sc.samples.filter((x) => x.side === "ours").map((x) => x.peakRssMiB);
    if (peaks.length > 0) lines.push(`| sidecar peak RSS | ≤ 128 MiB | ${Math.min(...peaks).toFixed(0)}–${Math.max(...peaks).toFixed(0)} MiB |`);
  }
  if (lines.length === 0) return "";
  return `\n### Issue 32's goals, per repetition (min–max, median) at ${record.options.rate}/s, ${record.options.reps} repetitions\n\n| Goal | target | measured |\n|---|---|---|\n${lines.join("\n")}\n`;
}
