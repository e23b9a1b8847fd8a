// `npm run bench -- agentdojo`: the hijacked-agent bound on AgentDojo (docs/agentdojo.md). The Python harness
// (bench/agentdojo/harness.py, in a cached virtual environment with AgentDojo from PyPI) replays every user task and
// every user × injection pair of each suite it is given a pack for through real sidecars, in three modes; this prints
// one table (suite × mode → ASR, utility, autonomy, asks per task) and writes bench/results/agentdojo.json.
// Options: --packs DIR (one pack per suite: DIR/<suite>/config.toml, policy.toml, rules/, or DIR/<suite>/policy.yaml, a
// LeviathPolicy; default examples/agentdojo)
// --suites a,b (any the installed AgentDojo ships; default: each one DIR holds a pack for)
// --modes gate-off,unattended,interactive  --pairs suite:user:injection,...  --order at-hijack|after-user
// --user-tasks user_task_0,... (a part of a suite, to run parts side by side and merge them with --report)
// --report A.json,B.json: no run, the table and record from harness outputs or records kept before (a run in parts).
// A run that fails prints one line saying why and exits non-zero, leaving no temporary folder.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { flagValue, ROOT, SuiteRecord } from "./bench-results.ts";
import { ensureAgentDojoVenv, HARNESS_DIR } from "./agentdojo/venv.ts";
import { summarizeAgentDojo, renderAgentDojoTable, type AgentDojoRun } from "./agentdojo/summary.ts";

const options = {
  packs: resolve(flagValue("packs", join(ROOT, "examples", "agentdojo"))),
  suites: flagValue("suites", ""),
  modes: flagValue("modes", "gate-off,unattended,interactive"),
  pairs: flagValue("pairs", ""),
  order: flagValue("order", "at-hijack"),
  userTasks: flagValue("user-tasks", ""),
};
const report = flagValue("report", "");
const record = new SuiteRecord("agentdojo", report === "" ? options : { report });

/** What harness.py writes. */
interface HarnessOutput {
  readonly benchmarkVersion: string;
  readonly order: string;
  /** Per suite: the injection tasks that send the user's data out, or null when they could not be computed. */
  readonly exfiltration: Record<string, string[] | null>;
  /** Per suite: "listed" (the harness's list), "computed" (from the attacks' calls), or why it is not computed. */
  readonly exfiltrationSource?: Record<string, string>;
  readonly results: AgentDojoRun[];
}

/** A run that cannot go on: its one line is printed, nothing else. */
class RunFailed extends Error {}

function runHarness(): HarnessOutput {
  let venv;
  try {
    venv = ensureAgentDojoVenv();
  } catch (e) {
    throw new RunFailed(`agentdojo: AgentDojo could not be installed from PyPI: ${(e as Error).message.split("\n")[0]}`);
  }
  const dir = mkdtempSync(join(tmpdir(), "leviath-agentdojo-bench-"));
  const out = join(dir, "results.json");
  try {
    try {
      execFileSync(venv.python, [
        join(HARNESS_DIR, "harness.py"), "--repo", ROOT, "--node", process.execPath, "--server-bin", venv.bin, "--packs", options.packs,
        "--out", out, "--suites", options.suites, "--modes", options.modes, "--pairs", options.pairs, "--order", options.order, "--user-tasks", options.userTasks,
      ], { stdio: "inherit", cwd: ROOT });
    } catch {
      throw new RunFailed(""); // the harness printed its one line
    }
    return JSON.parse(readFileSync(out, "utf8")) as HarnessOutput;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A part of `--report`: a harness output, or a record this suite wrote before (its runs and exfiltration tasks). */
function readPart(file: string): HarnessOutput {
  let raw;
  try {
    raw = JSON.parse(readFileSync(file, "utf8")) as Partial<HarnessOutput> & { runs?: AgentDojoRun[]; exfiltrationTasks?: Record<string, string[] | null> };
  } catch (e) {
    throw new RunFailed(`agentdojo: --report ${file}: ${(e as Error).message.split("\n")[0]}`);
  }
  const results = raw.results ?? raw.runs;
  if (raw.benchmarkVersion === undefined || raw.order === undefined || results === undefined) throw new RunFailed(`agentdojo: --report ${file}: not a harness output or an agentdojo record`);
  return { benchmarkVersion: raw.benchmarkVersion, order: raw.order, exfiltration: raw.exfiltration ?? raw.exfiltrationTasks ?? {}, ...(raw.exfiltrationSource === undefined ? {} : { exfiltrationSource: raw.exfiltrationSource }), results };
}

function main(): void {
  const parts = report === "" ? [runHarness()] : report.split(",").map(readPart);
  const first = parts[0]!;
  if (parts.some((p) => p.benchmarkVersion !== first.benchmarkVersion || p.order !== first.order)) throw new RunFailed("agentdojo: --report: the parts were run on different benchmark versions or orders");
  const runs = parts.flatMap((p) => p.results);
  const exfiltration = Object.assign({}, ...parts.map((p) => p.exfiltration)) as Record<string, string[] | null>;
  const exfiltrationSource = Object.assign({}, ...parts.map((p) => p.exfiltrationSource ?? {})) as Record<string, string>;
  const summary = summarizeAgentDojo(runs, exfiltration);
  process.stdout.write(renderAgentDojoTable(summary, first.benchmarkVersion, exfiltrationSource));
  Object.assign(record.extra, { benchmarkVersion: first.benchmarkVersion, order: first.order, exfiltrationTasks: exfiltration, exfiltrationSource, summary, runs });
  record.write();
}

try {
  main();
} catch (e) {
  if (!(e instanceof RunFailed)) throw e;
  if (e.message !== "") process.stderr.write(`${e.message}\n`);
  process.exitCode = 2;
}
