// Suite `peers` (issue 20): ours next to what a user would pick instead, on this machine in the same run. The
// controller against agent-sandbox's controller (Run → first Pod and → all children, Sandbox → Pod and → all, at
// 20/s against one real API server), the sidecar against an OPA server deciding the same tool call, with both HTTP
// floors. The peers are built from the Go module proxy at pinned versions (scripts/peers-bin); every comparison is
// repeated (three times by default) with the contenders interleaved, and the tables give medians and ratios.
// Run with: node bench/peers-bench.ts [--reps 3] [--count 200] [--rate 20] [--workers 4] [--seconds 8] [--rate-groups 50]
//                                     [--only controller|sidecar] [--cpu N] [--client-cpu N] [--no-pin] [--profile] (our controller's CPU profile)
//                                     [--default-heap] (our sidecar, fastify floor and controller at Node's defaults, not the NODE_OPTIONS their containers get)
//                                     [--source] (our sidecar and controller from the TypeScript sources, not the compiled CLI the image ships)
//                                     [--controller-node-args "..."] (node flags for our controller instead of the chart's heap)
//        or: node bench/peers-bench.ts --report FILE [--before FILE]  (the tables of a kept record, with an earlier one's ratios beside them; builds and runs nothing)
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { flagValue, numberFlag, SuiteRecord } from "./bench-results.ts";
import { readChartControllerNodeArgs } from "./chart-heap.ts";
import { buildPeers } from "./peers-bin.ts";
import { runControllerPeers } from "./peers-controller.ts";
import { formatControllerReport, formatRestatedGoals, formatSidecarReport, readPeersRecord } from "./peers-report.ts";
import { runSidecarPeers } from "./peers-sidecar.ts";
import { hasTaskset } from "./sidecar-bench.ts";
import { SIDECAR_NODE_OPTIONS } from "../src/sandbox/pod-settings.ts";

const opts = {
  reps: numberFlag("reps", 3), count: numberFlag("count", 200), rate: numberFlag("rate", 20), workers: numberFlag("workers", 4),
  seconds: numberFlag("seconds", 8), groups: numberFlag("rate-groups", 50), only: flagValue("only", ""), profile: process.argv.includes("--profile"),
  defaultHeap: process.argv.includes("--default-heap"), source: process.argv.includes("--source"),
  controllerNodeArgs: flagValue("controller-node-args", "").split(" ").filter(Boolean),
};
// Our controller as the chart runs it (its NODE_OPTIONS and the old space its memory limit gives V8), unless told otherwise.
if (!process.argv.includes("--controller-node-args") && !opts.defaultHeap) opts.controllerNodeArgs = readChartControllerNodeArgs();
if (!["", "controller", "sidecar"].includes(opts.only)) {
  process.stderr.write(`peers: --only takes controller or sidecar, not '${opts.only}'\n`);
  process.exit(2);
}
const reportFile = flagValue("report", "");
if (reportFile) {
  // Printing a kept record needs neither the peers nor a cluster.
  try {
    const record = readPeersRecord(reportFile);
    const beforeFile = flagValue("before", "");
    const before = beforeFile ? readPeersRecord(beforeFile) : undefined;
    process.stdout.write(`peers record ${reportFile}: ${record.startedAt}, ${record.durationSeconds} s, load average ${record.load.before.join(" ")} before${before ? `; before: ${beforeFile}, ${before.startedAt}` : ""}\n`);
    process.stdout.write(formatControllerReport(record, before) + formatSidecarReport(record, before) + formatRestatedGoals(record));
    process.exit(0);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
}
const say = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const peers = buildPeers();
say(`peers: OPA ${peers.opaVersion} (${peers.opa}), agent-sandbox ${peers.agentSandboxVersion} (${peers.agentSandbox}), Go floor ${peers.goFloor}`);
// A run of one half writes peers-<half>.json, so it never replaces the whole record behind the docs' tables.
const record = new SuiteRecord(opts.only ? `peers-${opts.only}` : "peers", { ...opts, opaVersion: peers.opaVersion, agentSandboxVersion: peers.agentSandboxVersion, sidecarNodeOptions: SIDECAR_NODE_OPTIONS });
const workDir = mkdtempSync(join(tmpdir(), "leviath-bench-peers-"));

try {
  if (opts.only !== "sidecar") {
    const { batches, memory, profileTop } = await runControllerPeers(peers, { ...opts, workDir, log: say });
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
    record.extra["sidecar"] = { pinned: pin, samples };
  }
  // The tables are printed from the record as written, the same way `--report` prints a kept one.
  const written = readPeersRecord(record.write());
  process.stdout.write(formatControllerReport(written) + formatSidecarReport(written) + formatRestatedGoals(written));
  // A profiled run keeps its work directory: the .cpuprofile files are what it was for.
  if (opts.profile) say(`kept ${workDir}`);
  else rmSync(workDir, { recursive: true, force: true });
} catch (err) {
  say(`failed; the controllers' logs are in ${workDir}`);
  throw err;
}
