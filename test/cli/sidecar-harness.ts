// Starts the real `leviath sidecar` (bin/leviath) as a child process and talks to it over HTTP on loopback.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo } from "./run-cli.ts";

/** A running sidecar process. */
export interface SidecarProcess {
  readonly url: string;
  readonly metricsUrl: string | undefined;
  /** The scrape token /metrics serves (the harness passes its digest unless the args name one). */
  readonly metricsToken: string | undefined;
  /** The approval token (read from the file it printed the path of), standalone. */
  readonly token: string | undefined;
  /** The runtime token: every request but the health check and a prompt's answer carries it. */
  readonly runtimeToken: string;
  readonly runtimeTokenFile: string;
  readonly approvalTokenFile: string | undefined;
  readonly proc: ChildProcess;
  /** Everything it printed on stderr so far (its JSON log lines). */
  stderr(): string;
  /** Everything it printed on stdout so far (its address; in a cluster, its audit lines). */
  stdout(): string;
  /** Sends a signal and resolves with the exit code (or the signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string | null>;
  /** Resolves with the exit code (or the signal name) once it exits, sending nothing. */
  exited(): Promise<number | string | null>;
}

/** An HTTP answer: status and parsed JSON body. */
export interface HttpAnswer<T = Record<string, unknown>> {
  readonly status: number;
  readonly body: T;
}

/** A fresh canonical temporary directory. */
export function makeTempDir(prefix: string): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/** The scrape token of the sidecars started here with `--metrics-listen` and no `--metrics-token-sha256`. */
export const TEST_METRICS_TOKEN = "test-scrape-token-0123456789abcdef0123456789abcdef";

/** Starts `leviath sidecar ARGS` and waits until it prints its address. */
export function startSidecar(given: string[], opts: { env?: Record<string, string | undefined>; cwd?: string } = {}): Promise<SidecarProcess> {
  const ownToken = given.includes("--metrics-listen") && !given.includes("--metrics-token-sha256");
  const args = ownToken ? [...given, "--metrics-token-sha256", createHash("sha256").update(TEST_METRICS_TOKEN).digest("hex")] : given;
  const env: Record<string, string | undefined> = { ...process.env, ...opts.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  delete env["KUBERNETES_SERVICE_HOST"];
  const proc = spawn(process.execPath, [repo("bin/leviath"), "sidecar", "--listen", "127.0.0.1:0", ...args], {
    cwd: opts.cwd ?? repo(""), env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  proc.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string | null>((resolve) => proc.once("exit", (code, signal) => resolve(code ?? signal)));
  return new Promise((resolve, reject) => {
    // Generous: on a loaded machine (the suite runs beside others) a cold start can take tens of seconds.
    const timer = setTimeout(() => reject(new Error(`sidecar did not start:\n${out}\n${err}`)), 60_000);
    void exited.then((code) => reject(new Error(`sidecar exited (${code}) before listening:\n${out}\n${err}`)));
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stdout.on("data", () => {
      const url = /listening on (\S+)/.exec(out)?.[1];
      const wantsMetrics = args.includes("--metrics-listen");
      const metricsUrl = /metrics on (\S+)/.exec(out)?.[1];
      const wantsToken = !args.includes("--run-policy") && !args.includes("--kubeconfig");
      const runtimeTokenFile = /runtime token file: (\S+)\n/.exec(out)?.[1];
      const approvalTokenFile = /approval token file: (\S+)\n/.exec(out)?.[1];
      if (url === undefined || runtimeTokenFile === undefined || (wantsMetrics && metricsUrl === undefined) || (wantsToken && approvalTokenFile === undefined)) return;
      clearTimeout(timer);
      const runtimeToken = readFileSync(runtimeTokenFile, "utf8").trim();
      const token = approvalTokenFile === undefined ? undefined : readFileSync(approvalTokenFile, "utf8").trim();
      runtimeTokens.set(url, runtimeToken);
      resolve({
        url, metricsUrl, metricsToken: ownToken ? TEST_METRICS_TOKEN : undefined, token, proc, runtimeToken, runtimeTokenFile, approvalTokenFile,
        stderr: () => err,
        stdout: () => out,
        stop(signal: NodeJS.Signals = "SIGTERM") {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
          return exited;
        },
        exited: () => exited,
      });
    });
  });
}

/** The runtime token of each sidecar started here, by its URL: requests to it carry it, as a runtime's would. */
const runtimeTokens = new Map<string, string>();

/** The runtime's `Authorization` header for a URL of a sidecar started here (none for other URLs). */
export function runtimeAuth(url: string): Record<string, string> {
  for (const [base, token] of runtimeTokens) if (url.startsWith(`${base}/`)) return { authorization: `Bearer ${token}` };
  return {};
}

/** POSTs JSON as the runtime (its token unless `headers` sets `authorization`) and parses the JSON answer. */
export async function post<T = Record<string, unknown>>(url: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer<T>> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...runtimeAuth(url), ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T };
}

/** GETs as the runtime and parses the JSON answer. */
export async function get<T = Record<string, unknown>>(url: string, headers: Record<string, string> = {}): Promise<HttpAnswer<T>> {
  const res = await fetch(url, { headers: { ...runtimeAuth(url), ...headers } });
  return { status: res.status, body: (await res.json()) as T };
}

/** A tool call's answer. */
export interface CallAnswer {
  id: string;
  tool: string;
  decision: "allow" | "run" | "ask" | "deny";
  result?: string;
  isError?: boolean;
  label?: string;
  taint?: string;
  code?: string;
  message?: string;
  approval?: { id: string; kind: string; prompt: string; options: string[] };
}

let counter = 0;

/** One tool call through the sidecar; the id is generated unless given. */
export function callTool(sc: SidecarProcess, tool: string, args: Record<string, unknown>, id = `call-${++counter}`): Promise<HttpAnswer<CallAnswer>> {
  return post<CallAnswer>(`${sc.url}/v1/tool-calls`, { id, tool, args });
}

/** Answers a prompt with the approval token, then waits for the call's final answer. */
export async function answerAndWait(sc: SidecarProcess, approvalId: string, callId: string, decision: string): Promise<HttpAnswer<CallAnswer>> {
  const answered = await post(`${sc.url}/v1/approvals/${approvalId}`, { decision }, { authorization: `Bearer ${sc.token}` });
  if (answered.status !== 200) throw new Error(`answer failed: ${answered.status} ${JSON.stringify(answered.body)}`);
  return get<CallAnswer>(`${sc.url}/v1/tool-calls/${callId}?wait=10`);
}

/** The parsed lines of a JSON Lines file. */
export function parseJsonLines(text: string): Record<string, unknown>[] {
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** GET /metrics as the scraper would (with the scrape token), as text; a refusal is an error. */
export async function scrapeMetrics(sc: SidecarProcess): Promise<string> {
  const res = await fetch(sc.metricsUrl!, { headers: { authorization: `Bearer ${sc.metricsToken}` } });
  if (res.status !== 200) throw new Error(`scrape refused: ${res.status}`);
  return res.text();
}

/** One metric sample's value from Prometheus text, or undefined. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v) && Object.keys(got).length === Object.keys(labels).length) return Number(m[3]);
  }
  return undefined;
}
