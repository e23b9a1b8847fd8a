// Suite `sidecar-memory` (issue 14, finding 6): the real `leviath sidecar` process driven through the call
// sequences that used to grow its memory without bound, each in a fresh process, with its peak resident set
// (VmHWM in /proc/<pid>/status, the kernel's own high-water mark) against the engine pod's sidecar memory limit.
// The sidecar runs with the memory environment its container gets (SIDECAR_MEMORY_ENV: V8 flags, those the sidecar sets on itself, glibc's mmap threshold) and, unless `--standalone`, with
// its cluster parts preloaded, as the in-cluster sidecar has them (the standalone one never loads them).
// It runs the compiled CLI the image ships (dist/main.js, built first with tsconfig.build.json); `--source` runs
// the TypeScript sources instead, whose type stripping adds about 30 MiB to the resident set.
// Run with: node bench/sidecar-memory-bench.ts [--pending N] [--rounds N] [--standalone] [--source] [--sidecar-node-args "--max-old-space-size=..."]
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { DEFAULT_POD_SETTINGS, SIDECAR_MEMORY_ENV, SIDECAR_NODE_OPTIONS } from "../src/sandbox/pod-settings.ts";
import { flagValue, numberFlag, ROOT, SuiteRecord } from "./bench-results.ts";
import { buildSidecarTree, type SidecarTree } from "./bench-tree.ts";

/** The sidecar container's memory limit in the engine pod's default resources, in MiB. */
const POD_LIMIT_MIB = Number(/^(\d+)Mi$/.exec(String(DEFAULT_POD_SETTINGS.resources.sidecar.limits["memory"]))?.[1] ?? NaN);

interface Sidecar {
  readonly url: string;
  readonly pid: number;
  readonly auth: Record<string, string>;
  stop(): Promise<void>;
}

/** The CLI the sidecar runs from: the sources through bin/leviath, or the compiled CLI the image ships. */
const FROM_SOURCE = process.argv.includes("--source");
const ENTRY = join(ROOT, FROM_SOURCE ? "bin/leviath" : "dist/main.js");

function startSidecar(tree: SidecarTree, name: string, nodeArgs: readonly string[]): Promise<Sidecar> {
  const args = [...nodeArgs, ENTRY, "sidecar", "--agent", join(tree.root, "agent.leviath"), "--config", join(tree.root, "config.toml"),
    "--workdir", tree.work, "--audit-dir", join(tree.root, `audit-${name}`), "--listen", "127.0.0.1:0", "--log-level", "warn"];
  const proc = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, MALLOC_MMAP_THRESHOLD_: SIDECAR_MEMORY_ENV["MALLOC_MMAP_THRESHOLD_"], LEVIATH_SIDECAR_V8_FLAGS: SIDECAR_MEMORY_ENV["LEVIATH_SIDECAR_V8_FLAGS"], LEVIATH_HOME: tree.home }, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  let out = "";
  return new Promise((resolve, reject) => {
    proc.once("exit", (code) => reject(new Error(`sidecar exited ${code}`)));
    proc.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const url = /listening on (\S+)/.exec(out)?.[1];
      const tokenFile = /runtime token file: (\S+)\n/.exec(out)?.[1];
      if (url === undefined || tokenFile === undefined || !out.includes("approval token file")) return;
      const auth = { authorization: `Bearer ${readFileSync(tokenFile, "utf8").trim()}` };
      resolve({ url, pid: proc.pid!, auth, stop: () => (proc.kill("SIGTERM"), exited) });
    });
  });
}

/** Resident set now and at its peak, MiB, from the kernel. */
export function rssOf(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { now: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

async function call(sc: Sidecar, id: string, tool: string, args: Record<string, unknown>): Promise<{ status: number; decision: string; code?: string }> {
  const res = await fetch(`${sc.url}/v1/tool-calls`, { method: "POST", headers: { "content-type": "application/json", ...sc.auth }, body: JSON.stringify({ id, tool, args }) });
  const body = (await res.json()) as { decision: string; code?: string };
  return { status: res.status, decision: body.decision, ...(body.code === undefined ? {} : { code: body.code }) };
}

interface MemoryRow {
  readonly name: string;
  readonly startMiB: number;
  readonly peakMiB: number;
  readonly note: string;
}

type Sequence = (sc: Sidecar) => Promise<string>;

/** Counts answers by `decision[/code]`, for the row's note (so a row never measures a path it does not name). */
function tally(answers: readonly { decision: string; code?: string }[]): string {
  const counts = new Map<string, number>();
  for (const a of answers) counts.set(a.code ?? a.decision, (counts.get(a.code ?? a.decision) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${n.toLocaleString("en-US")} ${k}`).join(", ");
}

function sequences(tree: SidecarTree, pending: number, rounds: number): Record<string, Sequence> {
  const big = join(tree.work, "big");
  mkdirSync(big, { recursive: true });
  const names = Array.from({ length: 8 }, (_, i) => `f${i}.txt`);
  for (const n of names) writeFileSync(join(big, n), "x".repeat(16 * 1024 * 1024));
  // Eight files filling the 8 MiB total of one read_files call exactly.
  const parts = names.map((n) => `part-${n}`);
  for (const n of parts) writeFileSync(join(big, n), "z".repeat(1024 * 1024));
  const content = "y".repeat(64 * 1024);
  return {
    // write_file asks for approval in interactive mode: every call stays pending, with 64 KiB of arguments.
    [`${pending.toLocaleString("en-US")} pending calls (write_file, 64 KiB each), none answered`]: async (sc) => {
      const answers = [];
      for (let i = 0; i < pending; i += 50) {
        answers.push(...(await Promise.all(Array.from({ length: Math.min(50, pending - i) }, (_, j) => call(sc, `w${i + j}`, "write_file", { path: `out/${i + j}`, content })))));
      }
      return tally(answers);
    },
    // Eight files filling the 8 MiB total of one read_files call, again and again, four at a time.
    [`read_files of 8 × 1 MiB (its 8 MiB total), ${rounds} rounds × 4 concurrent`]: async (sc) => {
      const answers = [];
      for (let r = 0; r < rounds; r++) {
        answers.push(...(await Promise.all(Array.from({ length: 4 }, (_, j) => call(sc, `m${r}-${j}`, "read_files", { paths: parts.map((n) => `big/${n}`) })))));
      }
      return tally(answers);
    },
    // Commands printing 60 MB each (under the seed's 64 MiB cap), four at a time: they share 8 MiB of output in flight.
    [`shell printing 60 MB, ${rounds} rounds × 4 concurrent`]: async (sc) => {
      const answers = [];
      for (let r = 0; r < rounds; r++) {
        answers.push(...(await Promise.all(Array.from({ length: 4 }, (_, j) => call(sc, `s${r}-${j}`, "shell", { command: "head -c 60000000 /dev/zero | tr '\\0' x" })))));
      }
      return tally(answers);
    },
    // One 16 MiB file per call, remembered for retries up to the 64 Mi budget of settled answers.
    [`read_file of 16 MiB × ${rounds * 4}, answers remembered`]: async (sc) => {
      const answers = [];
      for (let r = 0; r < rounds * 4; r++) answers.push(await call(sc, `r${r}`, "read_file", { path: `big/${names[r % 8]}` }));
      return tally(answers);
    },
  };
}

/** Runs the suite and writes `bench/results/sidecar-memory.json`. */
export async function runSidecarMemorySuite(pending: number, rounds: number, nodeArgs: readonly string[]): Promise<void> {
  const record = new SuiteRecord("sidecar-memory", { pending, rounds, podLimitMiB: POD_LIMIT_MIB, sidecarNodeArgs: nodeArgs, entry: ENTRY.slice(ROOT.length) });
  if (!FROM_SOURCE) execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(ROOT, "tsconfig.build.json")], { stdio: "inherit" });
  const tree = buildSidecarTree();
  try {
    const rows: MemoryRow[] = [];
    let i = 0;
    for (const [name, run] of Object.entries(sequences(tree, pending, rounds))) {
      const sc = await startSidecar(tree, `m${i++}`, nodeArgs);
      try {
        const start = rssOf(sc.pid).now;
        const note = await run(sc);
        rows.push({ name, startMiB: Math.round(start), peakMiB: Math.round(rssOf(sc.pid).peak), note });
      } finally {
        await sc.stop();
      }
    }
    process.stdout.write(`\nPeak resident set of the real sidecar (VmHWM), fresh process per row, against the ${POD_LIMIT_MIB} Mi pod limit\n`);
    for (const r of rows) process.stdout.write(`  ${r.name.padEnd(62)} start ${String(r.startMiB).padStart(4)} MiB  peak ${String(r.peakMiB).padStart(4)} MiB  ${r.peakMiB <= POD_LIMIT_MIB ? "within" : "OVER"} the limit  (${r.note})\n`);
    record.extra["memory"] = rows;
    record.write();
    const over = rows.filter((r) => r.peakMiB > POD_LIMIT_MIB);
    if (over.length > 0) throw new Error(`over the ${POD_LIMIT_MIB} Mi pod limit: ${over.map((r) => r.name).join("; ")}`);
  } finally {
    rmSync(tree.root, { recursive: true, force: true });
  }
}

/**
 * The in-cluster sidecar's footprint at start: the cluster parts it loads (REST and watches on node:https, pods/exec
 * over ws, the approval watcher; no @kubernetes/client-node since issue 20). The `sidecar-cluster` suite runs the
 * real thing against an API server.
 */
const CLUSTER_PRELOAD = ["kube/connect", "kube/pod-exec", "sidecar/cluster/cluster-approvals"]
  .map((m) => `--import=${pathToFileURL(join(ROOT, FROM_SOURCE ? `src/${m}.ts` : `dist/${m}.js`)).href}`);

if (import.meta.main) {
  const v8 = flagValue("sidecar-node-args", SIDECAR_NODE_OPTIONS).split(" ").filter((a) => a !== "");
  const nodeArgs = process.argv.includes("--standalone") ? v8 : [...v8, ...CLUSTER_PRELOAD];
  await runSidecarMemorySuite(numberFlag("pending", 5000), numberFlag("rounds", 5), nodeArgs);
}
