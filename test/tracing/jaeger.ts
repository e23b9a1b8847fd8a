// A real Jaeger (v1.75.0, built by scripts/jaeger-bin from the Go module proxy and cached under ~/.cache/leviath)
// for the tracing tests: started with in-memory storage (test/tracing/jaeger/config.yaml), its OTLP/HTTP receiver
// the exporters' endpoint and its query API read back with `fetch`. Every listener is on loopback but the receiver,
// which an e2e test puts on the node's address so that the engine pods reach it (test/e2e/tracing-run.test.ts).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** A tag of a span as Jaeger's query API gives it. */
export interface JaegerTag {
  readonly key: string;
  readonly type: string;
  readonly value: string | number | boolean;
}

/** A span as Jaeger's query API (`/api/traces`) gives it. */
export interface JaegerSpan {
  readonly traceID: string;
  readonly spanID: string;
  readonly operationName: string;
  readonly references: readonly { readonly refType: string; readonly traceID: string; readonly spanID: string }[];
  readonly tags: readonly JaegerTag[];
  readonly logs: readonly { readonly timestamp: number; readonly fields: readonly JaegerTag[] }[];
  readonly processID: string;
}

/** One trace: its spans and the processes (services) that sent them. */
export interface JaegerTrace {
  readonly traceID: string;
  readonly spans: readonly JaegerSpan[];
  readonly processes: Readonly<Record<string, { readonly serviceName: string; readonly tags: readonly JaegerTag[] }>>;
}

/** A running Jaeger. */
export interface Jaeger {
  /** The OTLP/HTTP traces endpoint (`http://<otlpHost>:<port>/v1/traces`). */
  readonly otlpEndpoint: string;
  /** The traces of a service, as the query API's JSON, and the raw text (to search for content that must not be there). */
  traces(service: string): Promise<{ data: JaegerTrace[]; text: string }>;
  /** The query API's URL of `path` (`/api/services`, ...). */
  queryUrl(path: string): string;
  stop(): Promise<void>;
}

/** A span's tags as an object. */
export function tagsOf(span: JaegerSpan): Record<string, string | number | boolean> {
  return Object.fromEntries(span.tags.map((t) => [t.key, t.value]));
}

/** A free port on `host` (held for no longer than it takes to read it). */
function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The Jaeger binary, built first when absent (minutes on a fresh machine: scripts/test builds it before the suite). */
export function ensureJaegerBinary(): string {
  return execFileSync("bash", [`${REPO}scripts/jaeger-bin`], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
}

/**
 * Starts Jaeger and resolves once its health check answers 200 (it exits or stays unhealthy: an error with its
 * output). `otlpHost`: the address its OTLP/HTTP receiver listens on (default loopback).
 */
export async function startJaeger(opts: { readonly otlpHost?: string } = {}): Promise<Jaeger> {
  const bin = ensureJaegerBinary();
  const otlpHost = opts.otlpHost ?? "127.0.0.1";
  // As it goes in a URL and in the receiver's `host:port` (an IPv6 address in brackets).
  const otlpAuthority = otlpHost.includes(":") ? `[${otlpHost}]` : otlpHost;
  const [otlp, query, grpc, health] = [await freePort(otlpHost), await freePort(), await freePort(), await freePort()];
  const env = { ...process.env, JAEGER_OTLP_HTTP_HOST: otlpAuthority, JAEGER_OTLP_HTTP_PORT: String(otlp), JAEGER_QUERY_PORT: String(query), JAEGER_QUERY_GRPC_PORT: String(grpc), JAEGER_HEALTH_PORT: String(health) };
  const proc: ChildProcess = spawn(bin, ["--config", `file:${HERE}jaeger/config.yaml`], { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  proc.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
    await exited;
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`jaeger exited (${proc.exitCode}) before it was healthy:\n${output}`);
    const ok = await fetch(`http://127.0.0.1:${health}/status`).then((r) => r.status === 200, () => false);
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`jaeger was not healthy within 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const queryUrl = (path: string) => `http://127.0.0.1:${query}${path}`;
  return {
    queryUrl,
    otlpEndpoint: `http://${otlpAuthority}:${otlp}/v1/traces`,
    async traces(service) {
      const res = await fetch(queryUrl(`/api/traces?service=${encodeURIComponent(service)}&limit=1000&lookback=1h`));
      const text = await res.text();
      if (res.status !== 200) throw new Error(`jaeger query answered ${res.status}: ${text}`);
      return { data: (JSON.parse(text) as { data: JaegerTrace[] }).data, text };
    },
    stop,
  };
}
