// The sidecar half of the peers suite: the real `leviath sidecar` beside an OPA server deciding the same tool call
// with the Rego of bench/peers/decision.rego (permission, the same 50 read-path entries, taint against clearance),
// and both HTTP floors (an empty fastify route, an empty Go net/http route). Every server runs pinned to one core,
// the load generator on the other; the servers take turns, in a rotated order each repetition.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { ROOT } from "./bench-results.ts";
import { summarize, type LatencySummary } from "./bench-stats.ts";
import { buildEntryTree, type EntryTree } from "./bench-tree.ts";
import { runAtRate, runFlatOut, type LoadRequest } from "./load-generator.ts";
import type { PeerBinaries } from "./peers-bin.ts";
import { startServer, type Server } from "./sidecar-bench.ts";
import { SIDECAR_MEMORY_ENV } from "../src/sandbox/pod-settings.ts";

/** One server under one kind of call. */
interface Contender {
  readonly name: string;
  readonly call: "read_file" | "http_post" | "floor";
  readonly side: "ours" | "OPA" | "floor";
  readonly expect: string;
  start(cpu: number | undefined, rep: number): Promise<Server>;
  request(server: Server): LoadRequest;
  /** The decision in an answer body (OPA wraps it in `result`). */
  decisionOf(body: unknown): string | undefined;
}

/** One contender's figures in one repetition. */
export interface PeerSample {
  readonly name: string;
  readonly call: string;
  readonly side: string;
  readonly rep: number;
  readonly atRate: LatencySummary & { perSecond: number; non2xx: number; errors: number };
  readonly flatOut: LatencySummary & { perSecond: number; non2xx: number; errors: number };
  /** The server's peak RSS (VmHWM) over its whole run, MiB. */
  readonly peakRssMiB: number;
}

const POST_URL = "https://hooks.example.com/x";

const freePort = () => new Promise<number>((resolve, reject) => {
  const s = createServer();
  s.once("error", reject);
  s.listen(0, "127.0.0.1", () => {
    const port = (s.address() as { port: number }).port;
    s.close(() => resolve(port));
  });
});

/** A process pinned to `cpu` (taskset execs it in place, so the pid is the server's), ready when `ready` resolves. */
async function startPinned(cmd: string, args: string[], cpu: number | undefined, url: string, ready: () => Promise<boolean>): Promise<Server> {
  const [file, argv] = cpu === undefined ? [cmd, args] : ["taskset", ["-c", String(cpu), cmd, ...args]];
  const proc = spawn(file, argv, { stdio: ["ignore", "ignore", "inherit"] });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const deadline = performance.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${cmd} exited ${proc.exitCode}`);
    if (await ready().catch(() => false)) break;
    if (performance.now() > deadline) throw new Error(`${cmd} was not ready after 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, pid: proc.pid!, auth: {}, stop: () => (proc.kill("SIGTERM"), exited) };
}

/** The sidecar's agent and config over the entry tree, and OPA's data from the same entries (~ expanded, compiled as ours compiles them). */
function writeConfigs(tree: EntryTree): string {
  const list = `[${tree.entries.map((e) => `'${e}'`).join(", ")}]`;
  writeFileSync(join(tree.root, "agent.leviath"), `[agent]\nname = 'bench'\n[read_paths]\nallow = ${list}\n[security]\ntaint_tracking = true\n`);
  writeFileSync(join(tree.root, "config.toml"), `[tool_permissions]\nread_file = 'allow'\nhttp_post = 'allow'\nfetch = 'allow'\n[agent_read_paths.bench]\nallow = ${list}\n`);
  const expand = (p: string) => p.replace(/^~/, tree.home);
  const entries = tree.entries.map((e) => {
    if (e.startsWith("glob:")) return { kind: "glob", pattern: expand(e.slice(5)) };
    if (e.startsWith("regex:")) return { kind: "regex", pattern: `^(?:${expand(e.slice(6))})$` };
    return { kind: "exact", path: expand(e), prefix: `${expand(e)}/` };
  });
  const data = { leviath: { permissions: { read_file: "allow", http_post: "allow" }, entries, allowlist: [{ tool: "http_post", to: ["*.example.com"], max: "private" }] } };
  const path = join(tree.root, "opa-data.json");
  writeFileSync(path, JSON.stringify(data));
  return path;
}

function contenders(tree: EntryTree, peers: PeerBinaries, opaData: string, nodeEnv: Readonly<Record<string, string>>, entry: string): Contender[] {
  const file = (i: number) => tree.files[((i % tree.files.length) + tree.files.length) % tree.files.length]!;
  const sidecarBody = (call: string) => (i: number) => call === "read_file"
    ? `{"id":"r${i}-${Math.random()}","tool":"read_file","args":{"path":"${file(i)}"}}`
    // `fetch`: upstream's outbound tool that the sidecar decides and hands back (`run`), classified and targeted as
    // http_post is; http_post itself is now sent by the sidecar, which would time the network, not the decision.
    : `{"id":"p${i}-${Math.random()}","tool":"fetch","args":{"url":"${POST_URL}"}}`;
  const opaBody = (call: string) => (i: number) => call === "read_file"
    ? `{"input":{"tool":"read_file","args":{"path":"${file(i)}"},"taint":"public"}}`
    : `{"input":{"tool":"http_post","args":{"url":"${POST_URL}"},"taint":"public"}}`;
  const top = (b: unknown) => (b as { decision?: string }).decision;
  const startOpa = async (cpu: number | undefined) => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // Its fastest honest configuration: no decision logs, no status or bundle plugins, error-level logging only
    // (access logs stay at their default info level, so none is written), the store optimised for reads, the
    // policy and data loaded from local files once; GOMAXPROCS follows the one-core affinity.
    return startPinned(peers.opa, ["run", "--server", "--addr", `127.0.0.1:${port}`, "--log-level", "error",
      "--optimize-store-for-read-speed", "--skip-version-check",
      join(ROOT, "bench/peers/decision.rego"), opaData], cpu, url, async () => (await fetch(`${url}/health`)).ok);
  };
  const sidecar = (call: "read_file" | "http_post"): Contender => ({
    name: `leviath sidecar: ${call}`, call, side: "ours", expect: call === "read_file" ? "200 allow" : "200 run",
    // A fresh audit dir each start: the session (its taint) persists there, and reads raise it to private.
    start: (cpu, rep) => startServer("sidecar", tree, `audit-${call}-${rep}`, cpu, [], nodeEnv, entry),
    request: (s) => ({ path: "/v1/tool-calls", body: sidecarBody(call), headers: s.auth }), decisionOf: top,
  });
  const opa = (call: "read_file" | "http_post"): Contender => ({
    name: `OPA ${peers.opaVersion}: ${call}`, call, side: "OPA", expect: call === "read_file" ? "200 allow" : "200 run",
    start: (cpu) => startOpa(cpu), request: () => ({ path: "/v1/data/leviath/decision", body: opaBody(call) }),
    decisionOf: (b) => (b as { result?: { decision?: string } }).result?.decision,
  });
  return [
    sidecar("read_file"), opa("read_file"), sidecar("http_post"), opa("http_post"),
    {
      name: "HTTP floor: empty fastify route", call: "floor", side: "floor", expect: "200 run",
      start: (cpu, rep) => startServer("floor", tree, `floor-${rep}`, cpu, [], nodeEnv), request: () => ({ path: "/v1/tool-calls", body: sidecarBody("http_post") }), decisionOf: top,
    },
    {
      name: "HTTP floor: empty Go net/http route", call: "floor", side: "floor", expect: "200 run",
      start: async (cpu) => {
        const port = await freePort();
        const url = `http://127.0.0.1:${port}`;
        return startPinned(peers.goFloor, ["--addr", `127.0.0.1:${port}`], cpu, url, async () => (await fetch(`${url}/healthz`)).ok);
      },
      request: () => ({ path: "/v1/tool-calls", body: sidecarBody("http_post") }), decisionOf: top,
    },
  ];
}

async function probe(c: Contender, s: Server): Promise<void> {
  const req = c.request(s);
  const res = await fetch(`${s.url}${req.path}`, { method: "POST", headers: { "content-type": "application/json", ...req.headers }, body: req.body(0) });
  const got = `${res.status} ${c.decisionOf(JSON.parse(await res.text()))}`;
  if (got !== c.expect) throw new Error(`bench setup: ${c.name} answered ${got}, expected ${c.expect}`);
}

const peakRssMiB = (pid: number) => Number(/VmHWM:\s*(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;

/** Runs every contender `reps` times (order rotated each time) at 1,000/s and flat out; the tree is removed after. */
export async function runSidecarPeers(peers: PeerBinaries, opts: { reps: number; seconds: number; groups: number; cpu: number | undefined; defaultHeap: boolean; source: boolean; log: (line: string) => void }): Promise<PeerSample[]> {
  const tree = buildEntryTree(50, 10, 20);
  const samples: PeerSample[] = [];
  try {
    // Ours (and the fastify floor, so the floor stays the same stack) run with the sidecar container's memory
    // environment, V8 flags and malloc threshold, as the chart deploys them; --default-heap runs them at Node's defaults.
    // And from the compiled CLI the image ships (built here first), unless --source: type stripping the sources
    // costs about 30 MiB of resident set the pod never has.
    if (!opts.source) execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(ROOT, "tsconfig.build.json")], { stdio: "inherit" });
    const entry = join(ROOT, opts.source ? "bin/leviath" : "dist/main.js");
    const list = contenders(tree, peers, writeConfigs(tree), opts.defaultHeap ? {} : SIDECAR_MEMORY_ENV, entry);
    for (let rep = 0; rep < opts.reps; rep++) {
      const order = [...list.slice(rep % list.length), ...list.slice(0, rep % list.length)];
      for (const c of order) {
        const s = await c.start(opts.cpu, rep);
        try {
          await probe(c, s);
          const req = c.request(s);
          await runFlatOut(s.url, req, 8, 2);
          const rate = await runAtRate(s.url, req, 1000, opts.seconds, opts.groups);
          const flat = await runFlatOut(s.url, req, 16, opts.seconds);
          await probe(c, s);
          const row = (r: typeof rate) => ({ ...summarize(r.latenciesNs), perSecond: r.perSecond, non2xx: r.non2xx, errors: r.errors });
          const sample: PeerSample = { name: c.name, call: c.call, side: c.side, rep, atRate: row(rate), flatOut: row(flat), peakRssMiB: peakRssMiB(s.pid) };
          samples.push(sample);
          opts.log(`rep ${rep + 1}: ${c.name}: 1,000/s p50 ${sample.atRate.p50.toFixed(0)} µs p99 ${sample.atRate.p99.toFixed(0)} µs p99.9 ${sample.atRate.p999.toFixed(0)} µs; flat out ${Math.round(sample.flatOut.perSecond)}/s; peak RSS ${sample.peakRssMiB.toFixed(0)} MiB`);
        } finally {
          await s.stop();
        }
      }
    }
  } finally {
    rmSync(tree.root, { recursive: true, force: true });
  }
  return samples;
}
