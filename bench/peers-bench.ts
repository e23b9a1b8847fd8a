// Suite `peers` (issue 20): ours next to what a user would pick instead, on this machine in the same run. The
// controller against agent-sandbox's controller (Run → first Pod and → all children, Sandbox → Pod and → all, at
// 20/s against one real API server), the sidecar against an OPA server deciding the same tool call, with both HTTP
// floors. The peers are built from the Go module proxy at pinned versions (scripts/peers-bin); every comparison is
// repeated (three times by default) with the contenders interleaved, and the tables give medians and ratios.
// Run with: node bench/peers-bench.ts [--reps 3] [--count 200] [--rate 20] [--workers 4] [--seconds 8] [--rate-groups 50]
//                                     [--only controller|sidecar] [--cpu N] [--client-cpu N] [--no-pin] [--profile] (our controller's CPU profile)
//                                     [--default-heap] (the sidecar and the fastify floor at Node's defaults, not the sidecar container's NODE_OPTIONS)
//                                     [--source] (the sidecar from the TypeScript sources, not the compiled CLI the image ships)
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { flagValue, numberFlag, SuiteRecord } from "./bench-results.ts";
import { formatMicros, formatRate } from "./bench-stats.ts";
import { buildPeers } from "./peers-bin.ts";
import { runControllerPeers, type ControllerBatch, type ControllerMemory } from "./peers-controller.ts";
import { runSidecarPeers, type PeerSample } from "./peers-sidecar.ts";
import { hasTaskset } from "./sidecar-bench.ts";
import { SIDECAR_NODE_OPTIONS } from "../src/sandbox/pod-settings.ts";

const opts = {
  reps: numberFlag("reps", 3), count: numberFlag("count", 200), rate: numberFlag("rate", 20), workers: numberFlag("workers", 4),
  seconds: numberFlag("seconds", 8), groups: numberFlag("rate-groups", 50), only: flagValue("only", ""), profile: process.argv.includes("--profile"),
  defaultHeap: process.argv.includes("--default-heap"), source: process.argv.includes("--source"),
};
if (!["", "controller", "sidecar"].includes(opts.only)) {
  process.stderr.write(`peers: --only takes controller or sidecar, not '${opts.only}'\n`);
  process.exit(2);
}
const say = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const out = (s: string) => process.stdout.write(s);

const peers = buildPeers();
say(`peers: OPA ${peers.opaVersion} (${peers.opa}), agent-sandbox ${peers.agentSandboxVersion} (${peers.agentSandbox}), Go floor ${peers.goFloor}`);
const record = new SuiteRecord("peers", { ...opts, opaVersion: peers.opaVersion, agentSandboxVersion: peers.agentSandboxVersion });
const workDir = mkdtempSync(join(tmpdir(), "leviath-bench-peers-"));

function reportController(batches: readonly ControllerBatch[], memory: readonly ControllerMemory[]): void {
  const of = (c: ControllerBatch["controller"]) => batches.filter((b) => b.controller === c);
  const med = (c: ControllerBatch["controller"], f: (b: ControllerBatch) => number) => median(of(c).map(f));
  const cpuPer = (c: ControllerBatch["controller"], proc: string, per: "object" | "child") => med(c, (b) => (1000 * b.cpuSeconds[proc]!) / (b.objects * (per === "child" ? b.childrenPerObject : 1)));
  out(`\n### Controllers at ${opts.rate}/s, ${opts.count} objects a batch, median of ${opts.reps} repetitions (leviath: Run; agent-sandbox ${peers.agentSandboxVersion}: Sandbox)\n\n`);
  out("| | agent-sandbox | leviath | ratio | goal |\n|---|---|---|---|---|\n");
  const row = (name: string, f: (b: ControllerBatch) => number, fmt: (n: number) => string, goal = "") => {
    const a = med("agent-sandbox", f);
    const l = med("leviath", f);
    out(`| ${name} | ${fmt(a)} | ${fmt(l)} | ${ratio(l, a)} | ${goal} |\n`);
  };
  row("children per object", (b) => b.childrenPerObject, String);
  row("created → first Pod, p50", (b) => b.firstPod.p50, formatMicros, "≤ 2×");
  row("created → first Pod, p99", (b) => b.firstPod.p99, formatMicros, "≤ 3×");
  row("created → all children, p50", (b) => b.allChildren.p50, formatMicros);
  row("created → all children, p99", (b) => b.allChildren.p99, formatMicros);
  row("POST of the object (client-observed), p50", (b) => b.createPost.p50, formatMicros);
  const ms = (n: number) => `${n.toFixed(2)} ms`;
  out(`| controller CPU per object | ${ms(cpuPer("agent-sandbox", "agent-sandbox", "object"))} | ${ms(cpuPer("leviath", "leviath", "object"))} | ${ratio(cpuPer("leviath", "leviath", "object"), cpuPer("agent-sandbox", "agent-sandbox", "object"))} | |\n`);
  out(`| controller CPU per child written | ${ms(cpuPer("agent-sandbox", "agent-sandbox", "child"))} | ${ms(cpuPer("leviath", "leviath", "child"))} | ${ratio(cpuPer("leviath", "leviath", "child"), cpuPer("agent-sandbox", "agent-sandbox", "child"))} | ≤ 1× |\n`);
  out(`| kube-apiserver CPU per object (during its batch) | ${ms(cpuPer("agent-sandbox", "kube-apiserver", "object"))} | ${ms(cpuPer("leviath", "kube-apiserver", "object"))} | ${ratio(cpuPer("leviath", "kube-apiserver", "object"), cpuPer("agent-sandbox", "kube-apiserver", "object"))} | |\n`);
  out(`| etcd CPU per object (during its batch) | ${ms(cpuPer("agent-sandbox", "etcd", "object"))} | ${ms(cpuPer("leviath", "etcd", "object"))} | ${ratio(cpuPer("leviath", "etcd", "object"), cpuPer("agent-sandbox", "etcd", "object"))} | |\n`);
  const post = (c: ControllerBatch["controller"], r: string) => med(c, (b) => b.apiServerPostMeanMs[r] ?? NaN);
  out(`| API server's own POST mean: the object | ${ms(post("agent-sandbox", "sandboxes"))} | ${ms(post("leviath", "runs"))} | | |\n`);
  out(`| API server's own POST mean: pods | ${ms(post("agent-sandbox", "pods"))} | ${ms(post("leviath", "pods"))} | | |\n`);
  for (const m of memory) out(`| RSS, ${m.when} (${m.objectsEach} objects each) | ${m.rssMiB["agent-sandbox"]} MiB | ${m.rssMiB["leviath"]} MiB | ${ratio(m.rssMiB["leviath"]!, m.rssMiB["agent-sandbox"]!)} | ${m.objectsEach >= 200 && m.objectsEach < 400 ? "≤ 2×" : ""} |\n`);
  out("\nPer repetition (first Pod p50 / p99, all children p50 / p99):\n\n");
  for (const b of batches) out(`- rep ${b.rep + 1} ${b.controller}: ${formatMicros(b.firstPod.p50)} / ${formatMicros(b.firstPod.p99)}, ${formatMicros(b.allChildren.p50)} / ${formatMicros(b.allChildren.p99)}; ${b.incomplete} incomplete; API server POST means ${JSON.stringify(b.apiServerPostMeanMs)} ms\n`);
  out("\nThe API server's requests per object during each batch (WATCH aside), and its own mean latency for each:\n\n");
  for (const b of batches) {
    const requests = Object.entries(b.apiServerRequests ?? {}).filter(([, r]) => r.count / b.objects >= 0.05);
    out(`- rep ${b.rep + 1} ${b.controller}: ${requests.map(([name, r]) => `${name} ${(r.count / b.objects).toFixed(2)} × ${r.meanMs.toFixed(1)} ms`).join(", ")}\n`);
  }
}

function reportSidecar(samples: readonly PeerSample[]): void {
  const names = [...new Set(samples.map((s) => s.name))];
  const med = (name: string, f: (s: PeerSample) => number) => median(samples.filter((s) => s.name === name).map(f));
  out(`\n### Decisions over loopback HTTP, server pinned to one core, median of ${opts.reps} repetitions; the sidecar ${opts.source ? "from the sources" : "compiled (dist/, as the image ships it)"}; ours and the fastify floor with ${opts.defaultHeap ? "Node's default heap" : `the sidecar container's NODE_OPTIONS (${SIDECAR_NODE_OPTIONS})`}\n\n| Server and call | 1,000/s p50 | p99 | p99.9 | flat out (16 connections), calls/s | peak RSS |\n|---|---|---|---|---|---|\n`);
  for (const n of names) out(`| ${n} | ${formatMicros(med(n, (s) => s.atRate.p50))} | ${formatMicros(med(n, (s) => s.atRate.p99))} | ${formatMicros(med(n, (s) => s.atRate.p999))} | ${formatRate(med(n, (s) => s.flatOut.perSecond))} | ${med(n, (s) => s.peakRssMiB).toFixed(0)} MiB |\n`);
  const find = (side: string, call: string) => names.find((n) => samples.some((s) => s.name === n && s.side === side && s.call === call))!;
  out("\n| Ratio, ours / OPA | p50 | p99 | p99.9 | flat out (higher is better) | peak RSS |\n|---|---|---|---|---|---|\n");
  for (const call of ["read_file", "http_post"]) {
    const [o, p] = [find("ours", call), find("OPA", call)];
    const r = (f: (s: PeerSample) => number) => ratio(med(o, f), med(p, f));
    out(`| ${call} | ${r((s) => s.atRate.p50)} | ${r((s) => s.atRate.p99)} | ${r((s) => s.atRate.p999)} | ${r((s) => s.flatOut.perSecond)} | ${r((s) => s.peakRssMiB)} |\n`);
  }
  const fastify = names.find((n) => n.includes("fastify"))!;
  const go = names.find((n) => n.includes("Go net/http"))!;
  out(`\nFloors: sidecar http_post p50 is ${ratio(med(find("ours", "http_post"), (s) => s.atRate.p50), med(fastify, (s) => s.atRate.p50))} the fastify floor's (goal ≤ 1.5×); OPA http_post p50 is ${ratio(med(find("OPA", "http_post"), (s) => s.atRate.p50), med(go, (s) => s.atRate.p50))} the Go floor's.\n`);
}

try {
  if (opts.only !== "sidecar") {
    const { batches, memory, profileTop } = await runControllerPeers(peers, { ...opts, workDir, log: say });
    reportController(batches, memory);
    record.extra["controller"] = { batches, memory, ...(profileTop ? { profileTop } : {}) };
    // Written now too, so the controller half is kept if the decision half fails.
    record.write();
  }
  if (opts.only !== "controller") {
    const pin = !process.argv.includes("--no-pin") && hasTaskset() && cpus().length > 1;
    const cpu = Number(flagValue("cpu", String(cpus().length - 1)));
    if (pin) execFileSync("taskset", ["-a", "-p", "-c", flagValue("client-cpu", "0"), String(process.pid)], { stdio: "ignore" });
    else say("warning: taskset missing or one CPU: the servers are NOT pinned");
    const samples = await runSidecarPeers(peers, { reps: opts.reps, seconds: opts.seconds, groups: opts.groups, cpu: pin ? cpu : undefined, defaultHeap: opts.defaultHeap, source: opts.source, log: say });
    reportSidecar(samples);
    record.extra["sidecar"] = { pinned: pin, samples };
  }
  record.write();
  rmSync(workDir, { recursive: true, force: true });
} catch (err) {
  say(`failed; the controllers' logs are in ${workDir}`);
  throw err;
}
