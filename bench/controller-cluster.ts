// The controller bench's fixture: the real control plane (etcd, kube-apiserver, kube-controller-manager from
// scripts/control-plane-bin), our CRDs, a restricted namespace, and `leviath controller` as a child process whose
// RSS and /metrics the bench reads.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { findBinary, startControlPlane, type ControlPlane } from "../test/integration/harness/control-plane.ts";
import { ROOT } from "./bench-results.ts";
import { createBenchKube, type BenchKube } from "./bench-kube.ts";

/** A running cluster with our CRDs installed, and a client to it. */
export interface BenchCluster {
  readonly cp: ControlPlane;
  readonly kube: BenchKube;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it returns true; throws after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs: number, everyMs = 200): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Waits (3 minutes: a loaded machine is slow) for an Agent to be valid; the error carries its status otherwise. */
export async function waitForValidAgent(kube: BenchKube, ns: string, name: string): Promise<void> {
  type AgentStatus = { status?: { valid?: boolean } };
  const path = `/apis/leviath.dev/v1alpha1/namespaces/${ns}/agents/${name}`;
  try {
    await until(async () => (await kube.call<AgentStatus>("GET", path)).status?.valid === true, `the Agent ${name} to be valid`, 180_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}; its status: ${JSON.stringify((await kube.call<AgentStatus>("GET", path)).status ?? null)}`);
  }
}

/** Starts the control plane, installs crds/ and creates `namespace` enforcing Pod Security `restricted`. */
export async function startBenchCluster(namespace: string, log: (line: string) => void): Promise<BenchCluster> {
  // From a fresh clone the binaries are built once (cached; a no-op afterwards), as scripts/test does.
  if (!process.env["KUBEBUILDER_ASSETS"]) {
    const built = spawnSync("bash", [join(ROOT, "scripts/control-plane-bin")], { stdio: ["ignore", "ignore", "inherit"] });
    if (built.status !== 0) throw new Error("scripts/control-plane-bin failed: the controller suite needs the control-plane binaries");
  }
  const cp = await startControlPlane({ log: (line) => log(`control plane: ${line}`) });
  const kubectl = findBinary("kubectl", cp.binDir);
  if (!kubectl) throw new Error(`no kubectl in ${cp.binDir}: run 'bash scripts/control-plane-bin'`);
  const run = (args: string[]) => {
    const r = spawnSync(kubectl, ["--kubeconfig", cp.kubeconfigPath, ...args], { encoding: "utf8", cwd: ROOT });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
  };
  run(["apply", "--server-side", "-f", "crds/"]);
  run(["wait", "--for=condition=Established", "--timeout=60s", ...["agents", "runs", "leviathpolicies", "approvals"].map((p) => `crd/${p}.leviath.dev`)]);
  const kube = createBenchKube(cp.kubeconfigPath);
  const labels: Record<string, string> = {};
  for (const mode of ["enforce", "warn", "audit"]) {
    labels[`pod-security.kubernetes.io/${mode}`] = "restricted";
    labels[`pod-security.kubernetes.io/${mode}-version`] = "latest";
  }
  await kube.call("POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace, labels } });
  // Pods naming no service account need `default`, which the controller manager creates.
  await until(async () => (await kube.send("GET", `/api/v1/namespaces/${namespace}/serviceaccounts/default`)).status === 200, "the default service account", 60_000);
  return {
    cp, kube,
    async stop() {
      kube.close();
      await cp.stop();
    },
  };
}

/** `leviath controller` running as a child process. */
export interface ControllerChild {
  readonly pid: number;
  readonly metricsUrl: string;
  readonly logPath: string;
  /** Log lines at warn or above so far. */
  readonly problems: string[];
  /** SIGTERM, then wait for the exit (a CPU profile, when asked for, is written then). */
  stop(): Promise<number | null>;
}

/** Builds the compiled CLI the image ships (`dist/`) and returns its entry; `bin/leviath` in a checkout runs the sources. */
export function buildCompiledCli(): string {
  execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(ROOT, "tsconfig.build.json")], { stdio: "inherit" });
  return join(ROOT, "dist/main.js");
}

/**
 * Starts `leviath controller` against the kubeconfig; `nodeArgs` go to node itself (e.g. `--cpu-prof`); `entry` is
 * the CLI (default `bin/leviath`, the TypeScript sources in a checkout, whose type stripping adds about 25 MiB of RSS);
 * `images` the sidecar and runtime images (default: names no node runs, for the benches without one).
 */
export async function startControllerChild(kubeconfig: string, opts: { workers: number; nodeArgs: string[]; logDir: string; entry?: string; images?: { sidecar: string; runtime: string }; extraArgs?: string[] }): Promise<ControllerChild> {
  const logPath = join(opts.logDir, "leviath-controller.log");
  const log = createWriteStream(logPath);
  const child = spawn(process.execPath, [...opts.nodeArgs, opts.entry ?? join(ROOT, "bin/leviath"), "controller", "--kubeconfig", kubeconfig, "--workers", String(opts.workers),
    "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0", "--log-level", "info",
    "--sidecar-image", opts.images?.sidecar ?? "registry.example/leviath:bench", "--runtime-image", opts.images?.runtime ?? "registry.example/runtime:bench", ...(opts.extraArgs ?? [])], {
    stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KUBECONFIG: "" },
  });
  // What node prints to stdout (a GC trace asked for with nodeArgs) goes to the log too.
  child.stdout!.pipe(log, { end: false });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const problems: string[] = [];
  let metrics: string | undefined;
  child.stderr!.pipe(log, { end: false });
  createInterface({ input: child.stderr!, crlfDelay: Infinity }).on("line", (line) => {
    try {
      const entry = JSON.parse(line) as { msg?: string; level?: number; addresses?: { metrics?: string } };
      if (entry.msg === "controller started") metrics = entry.addresses?.metrics;
      if ((entry.level ?? 0) >= 40 && problems.length < 50) problems.push(line);
    } catch {
      if (problems.length < 50) problems.push(line);
    }
  });
  await until(() => {
    if (child.exitCode !== null) throw new Error(`the controller exited ${child.exitCode}; log ${logPath}`);
    return metrics !== undefined;
  }, "the controller to start", 180_000);
  return {
    pid: child.pid!, metricsUrl: `http://${metrics}/metrics`, logPath, problems,
    async stop() {
      child.kill("SIGTERM");
      const code = await exited;
      log.end();
      return code;
    },
  };
}

/** Resident set size of a process in KiB from `/proc/<pid>/status`: all of it (VmRSS), anonymous memory, mapped files. */
export function readRssKiB(pid: number): { rss: number; anon: number; file: number } {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`${name}:\\s*(\\d+) kB`).exec(text)?.[1] ?? NaN);
  return { rss: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile") };
}

/** CPU time a process used so far (user + system), in seconds, from `/proc/<pid>/stat`. */
export function readCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
  // After the command: state is field 3, utime field 14 and stime field 15 (1-based, in clock ticks of 1/100 s).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** One scrape of the Prometheus text format: `name{labels}` → value. */
export type Scrape = Map<string, number>;

/** Scrapes the controller's /metrics. */
export async function scrapeMetrics(url: string): Promise<Scrape> {
  return parseMetrics(await (await fetch(url)).text());
}

/** Parses the Prometheus text format. */
export function parseMetrics(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

/** The sum of every series of `name` whose labels contain all of `match` (e.g. `controller="run"`). */
export function sumSeries(scrape: Scrape, name: string, ...match: string[]): number {
  let total = 0;
  for (const [key, value] of scrape) {
    const base = key.includes("{") ? key.slice(0, key.indexOf("{")) : key;
    if (base === name && match.every((m) => key.includes(m))) total += value;
  }
  return total;
}

/** Waits until the run queue is empty and the reconcile count has not moved for `quietMs`. */
export async function waitForQuiet(url: string, quietMs: number, timeoutMs: number): Promise<void> {
  let last = -1;
  let since = performance.now();
  await until(async () => {
    const s = await scrapeMetrics(url);
    const passes = sumSeries(s, "controller_runtime_reconcile_total", 'controller="run"');
    const depth = sumSeries(s, "workqueue_depth", 'name="run"') + sumSeries(s, "controller_runtime_active_workers", 'controller="run"');
    if (passes !== last || depth > 0) {
      last = passes;
      since = performance.now();
    }
    return performance.now() - since >= quietMs;
  }, "the controller to go quiet", timeoutMs, 500);
}

/** This process's children by command name (etcd, kube-apiserver, kube-controller-manager, node), from /proc. */
export function findChildPids(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid) out[comm] = Number(entry);
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** CPU used so far: the whole machine (busy and total, in seconds of all cores) and named processes. */
export interface CpuSnapshot {
  readonly machineBusy: number;
  readonly machineTotal: number;
  readonly processes: Record<string, number>;
}

/** Reads /proc/stat and each named process's CPU time. */
export function snapshotCpu(pids: Record<string, number>): CpuSnapshot {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3]! + fields[4]!;
  const processes: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    try {
      processes[name] = readCpuSeconds(pid);
    } catch {
      processes[name] = NaN;
    }
  }
  const self = process.cpuUsage();
  processes["bench"] = (self.user + self.system) / 1e6;
  return { machineBusy: (total - idle) / 100, machineTotal: total / 100, processes };
}

/** Where the machine's CPU went between two snapshots, as percentages of one core (two cores = 200 %). */
export function computeCpuShares(before: CpuSnapshot, after: CpuSnapshot): Record<string, number> {
  const wall = (after.machineTotal - before.machineTotal) / cpus().length;
  const pct = (seconds: number) => Math.round((100 * seconds) / wall);
  const shares: Record<string, number> = { machine: pct(after.machineBusy - before.machineBusy) };
  let ours = 0;
  for (const name of Object.keys(after.processes)) {
    const used = after.processes[name]! - (before.processes[name] ?? 0);
    shares[name] = pct(used);
    ours += used;
  }
  shares["others"] = pct(after.machineBusy - before.machineBusy - ours);
  return shares;
}
