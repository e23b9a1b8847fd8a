// Suite `sidecar-start` (issue 42, the cold start): how long the in-cluster sidecar takes from its process's start to
// its listen, in CPU and wall time, run as its container runs it: the compiled CLI through bin/leviath from a tree laid
// out as the image's /app (bin/, dist/, package.json, node_modules; no src/), the container's memory environment
// (SIDECAR_MEMORY_ENV), cluster mode against a real kube-apiserver (its Run read over TLS, as in the pod), and the
// image's compile cache when the tree's checkout has scripts/compile-cache.mjs (written as scripts/build-images
// writes it). Sides, interleaved and rotated each repetition: `this`; `this, no cache` (the same tree with
// NODE_DISABLE_COMPILE_CACHE=1: what the cache alone does); `before` with `--before DIR` (another checkout, e.g.
// `git archive main | tar -x -C DIR` with node_modules linked); and `node` (node -e printing one line: the floor).
// CPU is user + system from /proc/<pid>/stat when the listen line arrives (10 ms ticks); wall is from the spawn.
// Run with: node bench/sidecar-start-bench.ts [--starts N] [--before DIR] [--profile DIR] [--node-options "..."]   (root not needed)
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SIDECAR_MEMORY_ENV } from "../src/sandbox/pod-settings.ts";
import { flagValue, numberFlag, readLoad, ROOT, SuiteRecord } from "./bench-results.ts";
import { readCpuSeconds, startBenchCluster, type BenchCluster } from "./controller-cluster.ts";
import { buildBenchRunPolicy } from "./sidecar-cluster-bench.ts";

const NAMESPACE = "bench-sidecar-start";
const RUN_POLICY = buildBenchRunPolicy(NAMESPACE);

/** One side: an app tree and the environment it starts with (none: the floor, a bare `node -e`). */
interface Side {
  readonly name: string;
  readonly app: string | undefined;
  readonly env: Readonly<Record<string, string>>;
}

/** One start's figures. */
interface Sample {
  readonly side: string;
  readonly rep: number;
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly load1: number;
}

/**
 * A checkout's compiled CLI laid out as the image's /app under `out`: its bin/ and package.json, dist/ compiled from its
 * src/, its node_modules linked (real path), and its compile cache written as the image build writes it (if it has one).
 */
export function buildAppTree(checkout: string, out: string): { app: string; cache: boolean } {
  const app = join(out, "app");
  rmSync(out, { recursive: true, force: true });
  mkdirSync(app, { recursive: true });
  cpSync(join(checkout, "bin"), join(app, "bin"), { recursive: true });
  cpSync(join(checkout, "package.json"), join(app, "package.json"));
  execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(checkout, "tsconfig.build.json"), "--outDir", join(app, "dist"), "--sourceMap", "false"], { stdio: "inherit", cwd: checkout });
  symlinkSync(realpathSync(join(checkout, "node_modules")), join(app, "node_modules"));
  const script = join(checkout, "scripts/compile-cache.mjs");
  if (!existsSync(script)) return { app, cache: false };
  execFileSync(process.execPath, [script, app], { stdio: "inherit" });
  return { app, cache: true };
}

/** Starts one side once and stops it; the CPU and wall time to its listen line. */
async function startOnce(side: Side, cluster: BenchCluster, run: string, dir: string): Promise<{ cpuMs: number; wallMs: number }> {
  mkdirSync(join(dir, "work"), { recursive: true });
  writeFileSync(join(dir, "run-policy.json"), JSON.stringify(RUN_POLICY));
  const args = side.app === undefined
    ? ["-e", "console.log('listening on floor')"]
    : [join(side.app, "bin/leviath"), "sidecar", "--run-policy", join(dir, "run-policy.json"), "--run", run, "--namespace", NAMESPACE,
      "--kubeconfig", cluster.cp.kubeconfigPath, "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit"), "--listen", "127.0.0.1:0", "--log-level", "warn"];
  // --profile DIR: a V8 CPU profile of each start (written at its exit: stopped by SIGTERM once the shell channel's wait ends).
  const profile = flagValue("profile", "");
  if (profile !== "" && side.app !== undefined) {
    args.splice(0, 0, "--cpu-prof", "--cpu-prof-dir", profile);
    args.push("--exec-wait-seconds", "1");
  }
  const env: NodeJS.ProcessEnv = { ...process.env, ...SIDECAR_MEMORY_ENV, ...side.env, KUBECONFIG: "" };
  delete env["KUBERNETES_SERVICE_HOST"];
  delete env["NODE_COMPILE_CACHE"];
  const started = performance.now();
  const proc = spawn(process.execPath, args, { cwd: side.app ?? dir, env, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((done) => proc.once("exit", () => done()));
  try {
    return await new Promise((done, fail) => {
      let out = "";
      proc.once("exit", (code) => fail(new Error(`${side.name} exited ${code} before it listened`)));
      proc.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (!out.includes("listening on")) return;
        const wallMs = performance.now() - started;
        done({ cpuMs: readCpuSeconds(proc.pid!) * 1000, wallMs });
        out = "";
      });
    });
  } finally {
    // Not its stop (measured elsewhere): a Run with no sandbox pod keeps its shell channel opening until the exec wait.
    proc.kill(profile !== "" ? "SIGTERM" : "SIGKILL");
    await exited;
  }
}

const quantile = (xs: readonly number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;

if (import.meta.main) {
  const starts = numberFlag("starts", 10);
  const beforeFlag = flagValue("before", "");
  const root = join(tmpdir(), `leviath-sidecar-start-${process.pid}`);
  const record = new SuiteRecord("sidecar-start", { starts, before: beforeFlag || undefined, nodeOptions: flagValue("node-options", "") || undefined, env: SIDECAR_MEMORY_ENV });
  const mine = buildAppTree(ROOT, join(root, "this"));
  const sides: Side[] = [{ name: "this", app: mine.app, env: {} }];
  if (mine.cache) sides.push({ name: "this, no cache", app: mine.app, env: { NODE_DISABLE_COMPILE_CACHE: "1" } });
  // --node-options "...": this tree once more with other NODE_OPTIONS than the container's (e.g. its semi-space).
  const nodeOptions = flagValue("node-options", "");
  if (nodeOptions !== "") sides.push({ name: "this, options", app: mine.app, env: { NODE_OPTIONS: nodeOptions } });
  if (beforeFlag !== "") sides.push({ name: "before", app: buildAppTree(resolve(beforeFlag), join(root, "before")).app, env: {} });
  sides.push({ name: "node", app: undefined, env: {} });
  const cluster = await startBenchCluster(NAMESPACE, (line) => process.stderr.write(`${line}\n`));
  const samples: Sample[] = [];
  try {
    for (let rep = 0; rep < starts; rep++) {
      // Rotated each repetition, so no side always starts first.
      const order = sides.map((_, i) => sides[(i + rep) % sides.length]!);
      for (const side of order) {
        const run = `ss-${rep}-${sides.indexOf(side)}`;
        await cluster.kube.call("POST", `/apis/leviath.dev/v1alpha1/namespaces/${NAMESPACE}/runs`, { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: run }, spec: { agentRef: { name: "agent" } } });
        const s = await startOnce(side, cluster, run, join(root, run));
        samples.push({ side: side.name, rep, ...s, load1: readLoad()[0] });
        process.stdout.write(`  ${side.name.padEnd(15)} start ${rep}: ${s.cpuMs.toFixed(0)} ms CPU, ${s.wallMs.toFixed(0)} ms wall to its listen (load ${readLoad()[0]})\n`);
      }
    }
  } finally {
    await cluster.stop();
    rmSync(root, { recursive: true, force: true });
  }
  process.stdout.write(`\nThe sidecar's start to its listen (compiled, bin/leviath, SIDECAR_MEMORY_ENV, cluster mode, a real API server), ${starts} starts each\n`);
  const summary: Record<string, unknown> = {};
  for (const side of sides) {
    const xs = samples.filter((s) => s.side === side.name);
    const cpu = xs.map((s) => s.cpuMs), wall = xs.map((s) => s.wallMs);
    summary[side.name] = { cpuMsP50: quantile(cpu, 0.5), cpuMsMin: Math.min(...cpu), cpuMsMax: Math.max(...cpu), wallMsP50: quantile(wall, 0.5), wallMsMin: Math.min(...wall), wallMsMax: Math.max(...wall) };
    process.stdout.write(`  ${side.name.padEnd(15)} CPU p50 ${quantile(cpu, 0.5).toFixed(0)} ms (${Math.min(...cpu).toFixed(0)} to ${Math.max(...cpu).toFixed(0)}), wall p50 ${quantile(wall, 0.5).toFixed(0)} ms (${Math.min(...wall).toFixed(0)} to ${Math.max(...wall).toFixed(0)})\n`);
  }
  record.extra["summary"] = summary;
  record.extra["samples"] = samples;
  record.write();
}
