// `npm run bench -- agentdojo`: the hijacked-agent bound on AgentDojo (docs/agentdojo.md). The Python harness
// (bench/agentdojo/harness.py, in a cached virtual environment with AgentDojo from PyPI) replays every user task and
// every user × injection pair of the workspace, banking and slack suites through real sidecars, in three modes;
// this prints one table (suite × mode → ASR, utility, asks per task) and writes bench/results/agentdojo.json.
// Options: --suites a,b  --modes gate-off,unattended,interactive  --pairs suite:user:injection,...  --order at-hijack|after-user
// --user-tasks user_task_0,... (a part of a suite, to run parts side by side and merge them with --report)
// --report A.json,B.json: no run, the table and record from harness outputs or records kept before (a run in parts).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { flagValue, ROOT, SuiteRecord } from "./bench-results.ts";
import { ensureAgentDojoVenv, HARNESS_DIR } from "./agentdojo/venv.ts";
import { summarizeAgentDojo, renderAgentDojoTable, type AgentDojoRun } from "./agentdojo/summary.ts";

const options = {
  suites: flagValue("suites", "workspace,banking,slack"),
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
  readonly exfiltration: Record<string, string[]>;
  readonly results: AgentDojoRun[];
}

function runHarness(): HarnessOutput {
  const venv = ensureAgentDojoVenv();
  const dir = mkdtempSync(join(tmpdir(), "leviath-agentdojo-bench-"));
  const out = join(dir, "results.json");
  try {
    execFileSync(venv.python, [
      join(HARNESS_DIR, "harness.py"), "--repo", ROOT, "--node", process.execPath, "--server-bin", venv.bin, "--packs", join(ROOT, "examples", "agentdojo"),
      "--out", out, "--suites", options.suites, "--modes", options.modes, "--pairs", options.pairs, "--order", options.order, "--user-tasks", options.userTasks,
    ], { stdio: "inherit", cwd: ROOT });
    return JSON.parse(readFileSync(out, "utf8")) as HarnessOutput;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A part of `--report`: a harness output, or a record this suite wrote before (its runs and exfiltration tasks). */
function readPart(file: string): HarnessOutput {
  const raw = JSON.parse(readFileSync(file, "utf8")) as Partial<HarnessOutput> & { runs?: AgentDojoRun[]; exfiltrationTasks?: Record<string, string[]> };
  return { benchmarkVersion: raw.benchmarkVersion!, order: raw.order!, exfiltration: raw.exfiltration ?? raw.exfiltrationTasks!, results: raw.results ?? raw.runs! };
}

const parts = report === "" ? [runHarness()] : report.split(",").map(readPart);
const first = parts[0]!;
if (parts.some((p) => p.benchmarkVersion !== first.benchmarkVersion || p.order !== first.order)) throw new Error("--report: the parts were run on different benchmark versions or orders");
const runs = parts.flatMap((p) => p.results);
const summary = summarizeAgentDojo(runs, first.exfiltration);
process.stdout.write(renderAgentDojoTable(summary, first.benchmarkVersion));
Object.assign(record.extra, { benchmarkVersion: first.benchmarkVersion, order: first.order, exfiltrationTasks: first.exfiltration, summary, runs });
record.write();
