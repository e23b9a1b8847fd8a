// Suite `sidecar` (DESIGN.md §7, rows two and three): the real `leviath sidecar` process over loopback HTTP,
// pinned to one core with taskset, driven by autocannon (in this process, pinned to another core) at a fixed rate
// and flat out. The in-process decisions it used to time are in the `decision` suite (bench/decision-bench.ts).
// Run with: node bench/sidecar-bench.ts [--seconds N] [--cpu N] [--client-cpu N] [--no-pin] [--profile] [--rate-groups N]
//   [--sidecar-node-args "--trace-gc ..."] [--keep] (keep the tree: audit files and each sidecar's stdout, audit-<kind>.log)
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { flagValue, numberFlag, readCpusAllowed, ROOT, SuiteRecord } from "./bench-results.ts";
import { printTable, summarize, type Row } from "./bench-stats.ts";
import { buildSidecarTree, type SidecarTree } from "./bench-tree.ts";
import { printProfileTop } from "./cpu-profile-top.ts";
import { runAtRate, runFlatOut, type LoadRequest, type LoadResult } from "./load-generator.ts";

/** Whether `taskset` can be run here. */
export function hasTaskset(): boolean {
  try {
    execFileSync("taskset", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A server process the load generator drives. */
export interface Server {
  readonly url: string;
  readonly pid: number;
  /** The runtime's `Authorization` header (none for the floor). */
  readonly auth: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

/** The real sidecar, or (`floor`) the empty fastify route of bench/http-floor.ts, pinned to `cpu`. */
export function startServer(which: "sidecar" | "floor", tree: Pick<SidecarTree, "root" | "work" | "home">, auditDir: string, cpu: number | undefined, nodeArgs: string[], env: Readonly<Record<string, string>> = {}, entry = join(ROOT, "bin/leviath")): Promise<Server> {
  const args = which === "floor"
    ? [...nodeArgs, join(ROOT, "bench/http-floor.ts")]
    : [...nodeArgs, entry, "sidecar", "--agent", join(tree.root, "agent.leviath"), "--config", join(tree.root, "config.toml"),
      "--workdir", tree.work, "--audit-dir", join(tree.root, auditDir), "--listen", "127.0.0.1:0", "--log-level", "warn"];
  // taskset execs node in place, so the pid is the server's and every thread it starts inherits the mask.
  const [cmd, argv] = cpu === undefined ? [process.execPath, args] : ["taskset", ["-c", String(cpu), process.execPath, ...args]];
  const proc = spawn(cmd, argv, { env: { ...process.env, ...env, LEVIATH_HOME: tree.home }, stdio: ["ignore", "pipe", "inherit"] });
  // Everything it prints (a GC trace asked for with --sidecar-node-args too) goes to a log beside its audit dir.
  const log = createWriteStream(join(tree.root, `${auditDir}.log`));
  proc.stdout.pipe(log);
  let out = "";
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    proc.once("exit", (code) => reject(new Error(`${which} exited ${code}`)));
    const onData = (d: Buffer) => {
      out += d.toString();
      const url = /listening on (\S+)/.exec(out)?.[1];
      // The sidecar prints its token files after its address: it is ready then.
      const tokenFile = /runtime token file: (\S+)\n/.exec(out)?.[1];
      if (url === undefined || (which === "sidecar" && !out.includes("approval token file"))) return;
      proc.stdout.off("data", onData);
      const auth: Record<string, string> = tokenFile === undefined ? {} : { authorization: `Bearer ${readFileSync(tokenFile, "utf8").trim()}` };
      // Waiting for the exit lets a CPU profile (--profile) be written.
      resolve({ url, pid: proc.pid!, auth, stop: () => (proc.kill("SIGTERM"), exited) });
    };
    proc.stdout.on("data", onData);
  });
}

/** The decision the sidecar gives one call of `req`, so a row can never time a different path than it names. */
export async function probeDecision(url: string, req: LoadRequest): Promise<string> {
  const res = await fetch(`${url}${req.path}`, { method: "POST", headers: { "content-type": "application/json", ...req.headers }, body: req.body(-1) });
  const text = await res.text();
  if (req.path === MCP_PATH) {
    // An SSE answer: one `data:` line holding the JSON-RPC response.
    const r = JSON.parse(/^data: (.*)$/m.exec(text)?.[1] ?? "{}") as { result?: { isError?: boolean } };
    return `${res.status} ${r.result === undefined ? "no result" : r.result.isError === true ? "isError" : "result"}`;
  }
  return `${res.status} ${(JSON.parse(text) as { decision?: string }).decision}`;
}

/** The MCP endpoint, and what an MCP client sends with every request. */
const MCP_PATH = "/mcp";
const MCP_ACCEPT = { accept: "application/json, text/event-stream" };

/** Opens an MCP session as an SDK client does (initialize, then initialized) and returns its header. */
async function openMcpSession(url: string, auth: Readonly<Record<string, string>>): Promise<Record<string, string>> {
  const headers = { "content-type": "application/json", ...MCP_ACCEPT, ...auth };
  const init = await fetch(`${url}${MCP_PATH}`, {
    method: "POST", headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } }),
  });
  await init.text();
  const id = init.headers.get("mcp-session-id");
  if (id === null) throw new Error(`bench setup: initialize answered ${init.status} without a session`);
  const session = { "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" };
  await (await fetch(`${url}${MCP_PATH}`, { method: "POST", headers: { ...headers, ...session }, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' })).text();
  return session;
}

const KINDS: readonly { name: string; server: "sidecar" | "floor"; expect: string; req: LoadRequest; session?: boolean }[] = [
  // A read in the workdir: decided and executed by the sidecar (open, read, label, audit).
  { name: "read_file", server: "sidecar", expect: "200 allow", req: { path: "/v1/tool-calls", body: (i: number) => `{"id":"h${i}-${Math.random()}","tool":"read_file","args":{"path":"src/app/lib/core/index.ts"}}` } },
  // The same read over MCP (tools/call on /mcp, stateless: no initialize, as each request is its own session).
  {
    name: "read_file over MCP", server: "sidecar", expect: "200 result",
    req: { path: MCP_PATH, headers: MCP_ACCEPT, body: (i: number) => `{"jsonrpc":"2.0","id":${i + 2},"method":"tools/call","params":{"name":"read_file","arguments":{"path":"src/app/lib/core/index.ts"}}}` },
  },
  // The same, in one MCP session (initialize once, as the SDK's client and `leviath agent` do): the session's SDK
  // server and transport are reused, so this row is the per-request cost the stateless row adds on top.
  {
    name: "read_file over MCP session", server: "sidecar", expect: "200 result", session: true,
    req: { path: MCP_PATH, headers: MCP_ACCEPT, body: (i: number) => `{"jsonrpc":"2.0","id":${i + 2},"method":"tools/call","params":{"name":"read_file","arguments":{"path":"src/app/lib/core/index.ts"}}}` },
  },
  // An outbound call the runtime executes: permission, target extraction and the taint gate, answered `run`.
  { name: "http_post (run)", server: "sidecar", expect: "200 run", req: { path: "/v1/tool-calls", body: (i: number) => `{"id":"p${i}-${Math.random()}","tool":"http_post","args":{"url":"https://hooks.example.com/x"}}` } },
  // The reference: the same request to an empty fastify route (bench/http-floor.ts), so no decision at all.
  { name: "HTTP floor: empty fastify route", server: "floor", expect: "200 run", req: { path: "/v1/tool-calls", body: (i: number) => `{"id":"f${i}-${Math.random()}","tool":"http_post","args":{"url":"https://hooks.example.com/x"}}` } },
];

// What the fixed-rate rows measure, in their note: autocannon times a request from its write, and a connection
// writes its next request only after the last answer, so a pause of the sidecar delays the requests behind it
// without timing their wait (coordinated omission): the tail is from the send, not from a schedule.
const rateNote = (groups: number) => `latency from the send, not from a schedule (coordinated omission); ${groups} autocannon instances × 2 connections, started ${Math.round(1000 / groups)} ms apart`;

function rowOf(name: string, r: LoadResult, target: string, note: string): Row {
  return { name, summary: summarize(r.latenciesNs), perSecond: r.perSecond, target, note: `${r.non2xx} non-2xx, ${r.errors} errors; ${note}` };
}

async function overHttp(tree: SidecarTree, seconds: number, groups: number, cpu: number | undefined, nodeArgs: string[]): Promise<{ rows: Row[]; sidecarCpus: string }> {
  const rows: Row[] = [];
  let sidecarCpus = "";
  // One sidecar per kind, each with its own audit dir (where the run's session, taint labels included, persists):
  // the reads label the context Private (a granted read path raises reads), after which the gate would stop every
  // http_post with a prompt instead of answering `run`.
  for (const kind of KINDS) {
    const sc = await startServer(kind.server, tree, `audit-${kind.name.split(" ")[0]!.replace(/\W/g, "")}`, cpu, nodeArgs);
    const session = kind.session === true ? await openMcpSession(sc.url, sc.auth) : {};
    const req: LoadRequest = { ...kind.req, headers: { ...kind.req.headers, ...sc.auth, ...session } };
    try {
      sidecarCpus = readCpusAllowed(sc.pid);
      process.stdout.write(`${kind.name}: sidecar pid ${sc.pid} on CPUs ${sidecarCpus}; load generator pid ${process.pid} on CPUs ${readCpusAllowed(process.pid)}\n`);
      const decision = await probeDecision(sc.url, req);
      if (decision !== kind.expect) throw new Error(`bench setup: ${kind.name} answered ${decision}, expected ${kind.expect}`);
      await runFlatOut(sc.url, req, 8, 2);
      for (const rate of [1000, 5000]) {
        const r = await runAtRate(sc.url, req, rate, seconds, groups);
        const target = kind.server === "floor" ? "" : rate === 1000 ? "p99 ≤ 500 µs" : "p99 ≤ 2 ms";
        rows.push(rowOf(`${kind.name} at ${rate.toLocaleString("en-US")} calls/s`, r, target, rateNote(groups)));
      }
      const flat = await runFlatOut(sc.url, req, 16, seconds);
      const after = await probeDecision(sc.url, req);
      rows.push(rowOf(`${kind.name}, 16 concurrent, flat out`, flat, kind.server === "floor" ? "" : "≥ 5,000 calls/s", `decision ${after} after the runs`));
    } finally {
      await sc.stop();
    }
  }
  return { rows, sidecarCpus };
}

/** Runs the suite and writes `bench/results/sidecar.json`. */
export async function runSidecarSuite(seconds: number, pin: boolean, cpu: number, clientCpu: number, profile: boolean, groups: number, sidecarNodeArgs: string[], keep: boolean): Promise<void> {
  const usePin = pin && hasTaskset() && cpus().length > Math.max(cpu, clientCpu);
  if (pin && !usePin) process.stdout.write("warning: taskset missing or too few CPUs: the sidecar is NOT pinned\n");
  const record = new SuiteRecord("sidecar", { seconds, rateGroups: groups, sidecarNodeArgs, pinned: usePin, sidecarCpu: usePin ? cpu : null, clientCpu: usePin ? clientCpu : null });
  // The generator gets the other core, so it never takes the sidecar's (`-a`: all of this process's threads).
  if (usePin) execFileSync("taskset", ["-a", "-p", "-c", String(clientCpu), String(process.pid)], { stdio: "ignore" });
  const tree = buildSidecarTree();
  const profileDir = join(tree.root, "profile");
  let kept = false;
  try {
    const { rows, sidecarCpus } = await overHttp(tree, seconds, groups, usePin ? cpu : undefined, [...sidecarNodeArgs, ...(profile ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [])]);
    const title = "Loopback HTTP (the real leviath sidecar process, one event loop, taint tracking and audit on; the floor: an empty fastify route)";
    printTable(title, rows);
    record.add(title, rows);
    record.extra["affinity"] = { sidecar: sidecarCpus, loadGenerator: readCpusAllowed(process.pid) };
    if (profile) record.extra["profileTop"] = printProfileTop(readdirSync(profileDir).map((f) => join(profileDir, f)));
    record.write();
    // The tree (with its audit files and the servers' logs) stays when it holds the profiles or was asked for.
    kept = profile || keep;
    if (kept) process.stdout.write(`kept ${tree.root} (audit-<kind>/, audit-<kind>.log${profile ? ", profile/" : ""})\n`);
  } finally {
    if (!kept) rmSync(tree.root, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const cores = cpus().length;
  await runSidecarSuite(numberFlag("seconds", 10), !process.argv.includes("--no-pin"), Number(flagValue("cpu", String(cores - 1))), Number(flagValue("client-cpu", "0")), process.argv.includes("--profile"),
    numberFlag("rate-groups", 50), flagValue("sidecar-node-args", "").split(" ").filter((a) => a !== ""),
    process.argv.includes("--keep"));
}
