// Suite `sidecar-cluster` (issue 20): the in-cluster sidecar's memory, run as its container runs it (the compiled CLI,
// the container's memory environment, SIDECAR_MEMORY_ENV) in cluster mode against a real kube-apiserver and etcd: its
// run policy, its Run, the approval watch, the Run status reporter and the audit ConfigMaps are all live. Two figures
// per sidecar, a fresh one each time: its resident set once it has started and reported (the module graph of its
// cluster parts) and its peak (VmHWM) under `read_file` at a fixed rate, whose audit records also go to the audit
// ConfigMaps every second. `--before DIR` runs another checkout's compiled CLI beside this one, interleaved (e.g. an
// older commit from `git archive`, with node_modules linked): the suite builds dist/ in both.
// Run with: node bench/sidecar-cluster-bench.ts [--seconds N] [--rate N] [--reps N] [--before DIR]
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { RunPolicySchema } from "../src/api/run-policy.ts";
import { SIDECAR_MEMORY_ENV } from "../src/sandbox/pod-settings.ts";
import { flagValue, numberFlag, ROOT, SuiteRecord } from "./bench-results.ts";
import { startBenchCluster, until, type BenchCluster } from "./controller-cluster.ts";
import { runAtRate } from "./load-generator.ts";
import { rssOf } from "./sidecar-memory-bench.ts";

const NAMESPACE = "bench-sidecar";
/** One container stage; read_file of a workdir file is allowed without a grant (also the `sidecar-start` suite's). */
export const buildBenchRunPolicy = (namespace: string) => RunPolicySchema.parse({
  agent: { key: `${namespace}/agent`, name: "agent" },
  stages: [{ name: "main", sandbox: { kind: "container", image: "busybox:1", network: false, mounts: [], persist: false, onUnavailable: "error", source: "blueprint" } }],
  entryStage: "main",
  launch: { mode: "interactive", allow: [] },
  toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
  taint: { tracking: true, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 60, shellTimeoutSeconds: 10 },
});
const RUN_POLICY = buildBenchRunPolicy(NAMESPACE);

/** One sidecar's figures. */
interface Sample {
  readonly side: string;
  readonly rep: number;
  readonly startMiB: number;
  readonly peakMiB: number;
  readonly answeredPerSecond: number;
  readonly non2xx: number;
  readonly errors: number;
}

/** Starts one checkout's compiled sidecar in cluster mode for `run`; resolves once it has printed its token files. */
function startClusterSidecar(checkout: string, cluster: BenchCluster, run: string, dir: string) {
  mkdirSync(join(dir, "work"), { recursive: true });
  writeFileSync(join(dir, "work", "notes.md"), "notes\n".repeat(100));
  writeFileSync(join(dir, "run-policy.json"), JSON.stringify(RUN_POLICY));
  const args = [join(checkout, "dist/main.js"), "sidecar", "--run-policy", join(dir, "run-policy.json"), "--run", run, "--namespace", NAMESPACE,
    "--kubeconfig", cluster.cp.kubeconfigPath, "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit"), "--listen", "127.0.0.1:0", "--log-level", "warn"];
  const env: NodeJS.ProcessEnv = { ...process.env, ...SIDECAR_MEMORY_ENV, KUBECONFIG: "" };
  delete env["KUBERNETES_SERVICE_HOST"];
  const proc = spawn(process.execPath, args, { cwd: checkout, env, stdio: ["ignore", "pipe", "inherit"] });
  // Every audit record is also a line on stdout, as in the pod: it goes to a file.
  proc.stdout.pipe(createWriteStream(join(dir, "stdout.log")));
  const exited = new Promise<void>((done) => proc.once("exit", () => done()));
  let out = "";
  return new Promise<{ url: string; pid: number; auth: Record<string, string>; stop: () => Promise<void> }>((done, fail) => {
    proc.once("exit", (code) => fail(new Error(`the sidecar of ${checkout} exited ${code}`)));
    const onData = (d: Buffer) => {
      out += d.toString();
      const url = /listening on (\S+)/.exec(out)?.[1];
      const tokenFile = /runtime token file: (\S+)\n/.exec(out)?.[1];
      if (url === undefined || tokenFile === undefined) return;
      proc.stdout.off("data", onData);
      done({ url, pid: proc.pid!, auth: { authorization: `Bearer ${readFileSync(tokenFile, "utf8").trim()}` }, stop: () => (proc.kill("SIGTERM"), exited) });
    };
    proc.stdout.on("data", onData);
  });
}

async function measure(side: string, checkout: string, cluster: BenchCluster, rep: number, rate: number, seconds: number, root: string): Promise<Sample> {
  const run = `sc-${side}-${rep}`;
  await cluster.kube.call("POST", `/apis/leviath.dev/v1alpha1/namespaces/${NAMESPACE}/runs`, { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: run }, spec: { agentRef: { name: "agent" } } });
  const sc = await startClusterSidecar(checkout, cluster, run, join(root, run));
  try {
    // Started means: its watches listed and its first status written to the Run.
    await until(async () => (await cluster.kube.call<{ status?: { stage?: string } }>("GET", `/apis/leviath.dev/v1alpha1/namespaces/${NAMESPACE}/runs/${run}`)).status?.stage === "main", `${run}: its status`, 60_000);
    await new Promise((r) => setTimeout(r, 2000));
    const startMiB = rssOf(sc.pid).now;
    const load = await runAtRate(sc.url, { path: "/v1/tool-calls", body: (i) => `{"id":"r${i}-${rep}-${side}","tool":"read_file","args":{"path":"notes.md"}}`, headers: sc.auth }, rate, seconds);
    return { side, rep, startMiB, peakMiB: rssOf(sc.pid).peak, answeredPerSecond: load.perSecond, non2xx: load.non2xx, errors: load.errors };
  } finally {
    await sc.stop();
  }
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;

if (import.meta.main) {
  const seconds = numberFlag("seconds", 10);
  const rate = numberFlag("rate", 1000);
  const reps = numberFlag("reps", 3);
  const beforeFlag = flagValue("before", "");
  const sides: [string, string][] = [["this", ROOT], ...(beforeFlag === "" ? [] : [["before", resolve(beforeFlag)] as [string, string]])];
  const record = new SuiteRecord("sidecar-cluster", { seconds, rate, reps, sides: Object.fromEntries(sides), env: SIDECAR_MEMORY_ENV });
  for (const [, checkout] of sides) execFileSync(process.execPath, [join(checkout, "node_modules/typescript/bin/tsc"), "-p", join(checkout, "tsconfig.build.json")], { stdio: "inherit", cwd: checkout });
  const root = join(tmpdir(), `leviath-sidecar-cluster-${process.pid}`);
  const cluster = await startBenchCluster(NAMESPACE, (line) => process.stderr.write(`${line}\n`));
  const samples: Sample[] = [];
  try {
    for (let rep = 0; rep < reps; rep++) {
      // Rotated each repetition, so neither side always runs first.
      for (const [side, checkout] of rep % 2 === 0 ? sides : [...sides].reverse()) {
        const s = await measure(side, checkout, cluster, rep, rate, seconds, root);
        samples.push(s);
        process.stdout.write(`  ${side.padEnd(7)} rep ${rep}: start ${s.startMiB.toFixed(0)} MiB, peak ${s.peakMiB.toFixed(0)} MiB under read_file at ${rate}/s (${Math.round(s.answeredPerSecond)}/s answered, ${s.non2xx} non-2xx, ${s.errors} errors)\n`);
      }
    }
  } finally {
    await cluster.stop();
    rmSync(root, { recursive: true, force: true });
  }
  process.stdout.write(`\nThe in-cluster sidecar (compiled, SIDECAR_MEMORY_ENV, a real API server), medians of ${reps}\n`);
  for (const [side] of sides) {
    const mine = samples.filter((s) => s.side === side);
    process.stdout.write(`  ${side.padEnd(7)} start ${median(mine.map((s) => s.startMiB)).toFixed(0)} MiB (${mine.map((s) => s.startMiB.toFixed(0)).join(" / ")}), peak ${median(mine.map((s) => s.peakMiB)).toFixed(0)} MiB (${mine.map((s) => s.peakMiB.toFixed(0)).join(" / ")})\n`);
  }
  record.extra["samples"] = samples;
  record.write();
}
