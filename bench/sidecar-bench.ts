// `npm run bench`, the sidecar's part (DESIGN.md §7): the decision in process (read-path check with realpath
// on a real tree, the gate), then the real `leviath sidecar` process over loopback HTTP at a fixed rate and
// at full speed. Run with: node bench/sidecar-bench.ts [--seconds N]
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { createSidecarMetrics } from "../src/metrics/sidecar-metrics.ts";
import { ContextTaint } from "../src/policy/context-taint.ts";
import { decideToolCall } from "../src/policy/decide-tool-call.ts";
import { buildReadPathPolicy, resolveRead, type PathFs } from "../src/policy/read-paths/index.ts";
import { ApprovalBook } from "../src/sidecar/approvals.ts";
import { createAuditWriter } from "../src/sidecar/audit-writer.ts";
import { PolicyHolder } from "../src/sidecar/policy-holder.ts";
import { createStandaloneSource } from "../src/sidecar/policy-sources.ts";
import { RunSession } from "../src/sidecar/run-session.ts";
import { ToolCallService } from "../src/sidecar/tool-call-service.ts";
import { printTable, summarize, type Row } from "./bench-stats.ts";
import { runClosedLoop, runFixedRate, type LoadRequest } from "./load-generator.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const secondsFlag = process.argv.indexOf("--seconds");
const seconds = secondsFlag === -1 ? 10 : Number(process.argv[secondsFlag + 1]);
if (!(seconds > 0)) throw new Error("--seconds needs a positive number");
const fs: PathFs = { realpath: (p) => realpathSync.native(p) };

/** A real tree: a workdir five levels deep, a home with granted and declared-only trees. */
function buildTree(): { root: string; work: string; home: string; deep: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "leviath-bench-")));
  const work = join(root, "work");
  const home = join(root, "home");
  const deep = join(work, "src", "app", "lib", "core");
  mkdirSync(deep, { recursive: true });
  mkdirSync(join(home, "docs", "design", "2026"), { recursive: true });
  mkdirSync(join(home, "projects", "a", "notes"), { recursive: true });
  mkdirSync(join(home, "private"), { recursive: true });
  writeFileSync(join(deep, "index.ts"), "export {};\n".repeat(50));
  writeFileSync(join(home, "docs", "design", "2026", "plan.md"), "# plan\n".repeat(50));
  writeFileSync(join(home, "projects", "a", "notes", "n.md"), "note\n");
  writeFileSync(join(home, "private", "key"), "k\n");
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'bench'\n[read_paths]\nallow = ['~/docs', 'glob:~/projects/**/*.md', 'regex:~/private/.*']\n[security]\ntaint_tracking = true\n");
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nshell = 'allow'\nhttp_post = 'allow'\n[agent_read_paths.bench]\nallow = ['~/docs', 'glob:~/projects/**/*.md']\n");
  return { root, work, home, deep };
}

function time(iterations: number, fn: (i: number) => void): Float64Array {
  for (let i = 0; i < Math.min(2000, iterations); i++) fn(i);
  const out = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    fn(i);
    out[i] = Number(process.hrtime.bigint() - t0);
  }
  return out;
}

async function inProcess(tree: ReturnType<typeof buildTree>): Promise<void> {
  const built = buildReadPathPolicy({
    agentName: "bench", declared: ["~/docs", "glob:~/projects/**/*.md", "regex:~/private/.*"], granted: ["~/docs", "glob:~/projects/**/*.md"],
    allowBlueprintReadPaths: false, workdir: tree.work, home: tree.home,
  });
  if (!built.ok) throw new Error(built.error);
  const ctx = { workdir: tree.work, policy: built.value, fs };
  const n = 20_000;
  const rows: Row[] = [
    { name: "resolveRead inside the workdir (4 levels)", summary: summarize(time(n, () => resolveRead("src/app/lib/core/index.ts", ctx))), target: "p99 ≤ 50 µs" },
    { name: "resolveRead granted, exact entry", summary: summarize(time(n, () => resolveRead(join(tree.home, "docs/design/2026/plan.md"), ctx))), target: "p99 ≤ 50 µs" },
    { name: "resolveRead granted, glob entry", summary: summarize(time(n, () => resolveRead(join(tree.home, "projects/a/notes/n.md"), ctx))), target: "p99 ≤ 50 µs" },
    { name: "resolveRead refused (declared, not granted)", summary: summarize(time(n, () => resolveRead(join(tree.home, "private/key"), ctx))), target: "p99 ≤ 50 µs" },
    { name: "realpath(3) alone, 5 levels", summary: summarize(time(n, () => realpathSync.native(join(tree.deep, "index.ts")))), note: "reference" },
  ];
  const taint = new ContextTaint([{ region: "conversation", entryId: "r", level: "private" }]);
  const gate = (i: number) => decideToolCall({
    gate: {
      taintTracking: true, agentId: "bench", callId: `c${i}`, tool: "http_post", target: "hooks.example.com", context: taint,
      policy: { overrides: new Map(), allowlist: [{ tool: "http_post", to: ["*.example.com"], channel: [], maxSensitivity: "private" }], rules: { rules: [], diagnostics: [] } },
      mode: "interactive", sessionRaises: new Set(), promptTimeoutSeconds: 3600, clock: Date.now,
    },
    permissions: { userPermissions: { http_post: "allow" } },
  });
  rows.push({ name: "permission + taint gate (allowlist match)", summary: summarize(time(n, gate)), target: "p99 ≤ 50 µs" });

  const source = createStandaloneSource({ agent: join(tree.root, "agent.leviath"), config: join(tree.root, "config.toml"), mode: "interactive", allow: [] });
  const loaded = PolicyHolder.open(source, { workdir: tree.work, home: tree.home }, { loaded() {}, failed() {} });
  if (!loaded.ok) throw new Error(loaded.error);
  const audit = createAuditWriter(join(tree.root, "audit"), "bench", () => {});
  const service = new ToolCallService({
    policy: () => loaded.holder.current(), workdir: tree.work, fs, session: new RunSession({ journal: null, entryStage: 0, onJournalError: () => {} }),
    approvals: new ApprovalBook(Date.now, () => {}), audit, metrics: createSidecarMetrics(), log: pino({ level: "silent" }),
    shell: { label: "local", run: async () => ({ exitCode: 0, stdout: "", stderr: "", timedOut: false }) }, clock: Date.now, monotonicMs: () => performance.now(), runName: "bench",
  });
  const samples = new Float64Array(n);
  for (let i = 0; i < n + 2000; i++) {
    const t0 = process.hrtime.bigint();
    await service.submit({ id: `s${i}`, tool: "read_file", args: { path: "src/app/lib/core/index.ts" } });
    if (i >= 2000) samples[i - 2000] = Number(process.hrtime.bigint() - t0);
  }
  audit.close();
  rows.push({ name: "whole read_file call in process (decide, open, read, label, audit)", summary: summarize(samples), note: "no HTTP" });
  printTable("In process", rows);
}

function startSidecar(tree: ReturnType<typeof buildTree>): Promise<{ url: string; stop: () => void }> {
  const proc = spawn(process.execPath, [join(ROOT, "bin/leviath"), "sidecar", "--agent", join(tree.root, "agent.leviath"), "--config", join(tree.root, "config.toml"),
    "--workdir", tree.work, "--audit-dir", join(tree.root, "audit-http"), "--listen", "127.0.0.1:0", "--log-level", "warn"], {
    env: { ...process.env, LEVIATH_HOME: tree.home }, stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  return new Promise((resolve, reject) => {
    proc.once("exit", (code) => reject(new Error(`sidecar exited ${code}`)));
    proc.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const url = /listening on (\S+)/.exec(out)?.[1];
      if (url !== undefined && out.includes("approval token")) resolve({ url, stop: () => proc.kill("SIGTERM") });
    });
  });
}

async function overHttp(tree: ReturnType<typeof buildTree>): Promise<void> {
  const sc = await startSidecar(tree);
  const read: LoadRequest = { path: "/v1/tool-calls", body: (i) => `{"id":"h${i}-${Math.random()}","tool":"read_file","args":{"path":"src/app/lib/core/index.ts"}}` };
  const run: LoadRequest = { path: "/v1/tool-calls", body: (i) => `{"id":"p${i}-${Math.random()}","tool":"http_post","args":{"url":"https://hooks.example.com/x"}}` };
  await runClosedLoop(sc.url, read, 8, 2);
  const rows: Row[] = [];
  for (const [name, req] of [["read_file", read], ["http_post (run)", run]] as const) {
    const r = await runFixedRate(sc.url, req, 1000, seconds);
    rows.push({ name: `${name} at 1,000 calls/s`, summary: summarize(r.latenciesNs), target: "p99 ≤ 500 µs", note: `${r.failed} failed; p99 from schedule ${summarize(r.fromScheduleNs).p99.toFixed(0)} µs` });
  }
  const five = await runFixedRate(sc.url, read, 5000, seconds);
  rows.push({ name: "read_file at 5,000 calls/s", summary: summarize(five.latenciesNs), target: "p99 ≤ 2 ms", note: `${five.failed} failed; ${(five.sent / five.seconds).toFixed(0)} calls/s achieved` });
  const closed = await runClosedLoop(sc.url, read, 16, seconds);
  rows.push({ name: "read_file, 16 concurrent, flat out", summary: summarize(closed.latenciesNs), target: "≥ 5,000 calls/s", note: `${(closed.sent / closed.seconds).toFixed(0)} calls/s; ${closed.failed} failed` });
  sc.stop();
  printTable("Loopback HTTP (the real leviath sidecar process, one event loop)", rows);
}

const tree = buildTree();
process.stdout.write(`sidecar bench: node ${process.version}, ${seconds} s per HTTP run, tree in ${tree.root}\n`);
await inProcess(tree);
await overHttp(tree);
