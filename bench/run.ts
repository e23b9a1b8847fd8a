// `npm run bench`: every suite in order, or the ones named (`npm run bench -- controller scaling`). Each suite runs
// in its own node process (a clean heap, its own CPU affinity), prints its tables and writes
// bench/results/<suite>.json. Options after the names go to every suite (`--seconds 5`, `--profile`, ...).
import { execFileSync, spawnSync } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "./bench-results.ts";

/** The suites, in the order they run. */
export const SUITES = {
  decision: "decision-bench.ts",
  sidecar: "sidecar-bench.ts",
  "sidecar-memory": "sidecar-memory-bench.ts",
  controller: "controller-bench.ts",
  scaling: "scaling-bench.ts",
  teardown: "teardown-bench.ts",
  peers: "peers-bench.ts",
  "sidecar-cluster": "sidecar-cluster-bench.ts",
  agentdojo: "agentdojo-bench.ts",
  start: "start-bench.ts",
  "shell-call": "shell-call-bench.ts",
  "sidecar-start": "sidecar-start-bench.ts",
} as const;

type SuiteName = keyof typeof SUITES;
const isSuite = (s: string): s is SuiteName => Object.hasOwn(SUITES, s);

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  process.stdout.write(`Usage: npm run bench [-- [${Object.keys(SUITES).join("|")}]... [suite options]]\n\nWith no name, every suite runs in that order. Results: bench/results/<suite>.json; figures and reading: docs/benchmarks.md.\n`);
  process.exit(0);
}
// Names are the leading words; anything from the first option on is passed through (option values may be words too).
const firstOption = args.findIndex((a) => a.startsWith("-"));
const names = firstOption === -1 ? args : args.slice(0, firstOption);
const passThrough = firstOption === -1 ? [] : args.slice(firstOption);
const unknown = names.filter((n) => !isSuite(n));
if (unknown.length > 0) {
  process.stderr.write(`bench: unknown suite ${unknown.map((n) => `'${n}'`).join(", ")}; the suites are ${Object.keys(SUITES).join(", ")}\n`);
  process.exit(2);
}
const chosen = names.length > 0 ? (names as SuiteName[]) : (Object.keys(SUITES) as SuiteName[]);

const uptime = () => {
  try {
    return execFileSync("uptime", { encoding: "utf8" }).trim();
  } catch {
    return "(uptime unavailable)";
  }
};

const failed: string[] = [];
for (const suite of chosen) {
  process.stdout.write(`\n=== bench ${suite} — ${uptime()}\n`);
  const started = performance.now();
  const r = spawnSync(process.execPath, [join(ROOT, "bench", SUITES[suite]), ...passThrough], { stdio: "inherit", cwd: ROOT });
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);
  process.stdout.write(`=== bench ${suite} done in ${minutes} min (exit ${r.status ?? r.signal}) — ${uptime()}\n`);
  if (r.status !== 0) failed.push(suite);
}
if (failed.length > 0) {
  process.stderr.write(`bench: ${failed.join(", ")} failed\n`);
  process.exit(1);
}
