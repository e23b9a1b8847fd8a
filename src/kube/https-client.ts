// A KubeClient on node:https over what kubeconfig.ts read: one keep-alive connection pool, bounded bodies, the API
// server's Status as errors, watches as lines of JSON, and the target of a WebSocket upgrade (pods/exec, exec-channel.ts)
// with the same TLS material and credentials. It loads nothing of @kubernetes/client-node.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import { buildResponseTooLargeError, DEFAULT_MAX_RESPONSE_BYTES, RESPONSE_TOO_LARGE } from "./bounded-body.ts";
import type { KubeClient, RequestOptions, WatchHandler } from "./client.ts";
import { KubeApiError, parseApiError } from "./errors.ts";
import type { KubeAccess } from "./kubeconfig.ts";

/** How long one connection pool serves before the access is read again (rotated CA, certificate, token file). */
export const ACCESS_MAX_AGE_MS = 5 * 60_000;
/** How long a token read from its file is used before the file is read again (client-go reads it each minute). */
const TOKEN_FILE_MAX_AGE_MS = 60_000;
/** A watch event larger than this is a misbehaving server, not an object. */
const MAX_WATCH_LINE_BYTES = 16 * 1024 * 1024;

type Pool = { access: KubeAccess; agent: HttpAgent; since: number; token?: { value: string; at: number } };

/** How the server's certificate is checked and which client certificate is shown: the same for requests and upgrades. */
export interface TlsOptions {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly rejectUnauthorized: boolean;
  readonly servername?: string;
}

/** What a WebSocket upgrade of one path (pods/exec) needs: its URL, the TLS material and the credentials in force. */
export interface UpgradeTarget {
  /** `wss://` (or `ws://`) URL of the path on the API server. */
  readonly url: string;
  readonly tls: TlsOptions;
  readonly headers: Readonly<Record<string, string>>;
}

/** A {@link KubeClient} on node:https that can also open WebSockets to the API server with the same access. */
export interface HttpsKubeClient extends KubeClient {
  /** The upgrade target of `path` (with its query) from the access and token in force now. */
  upgradeTarget(path: string): UpgradeTarget;
}

/** Build a client that reads its access with `load` now and again every {@link ACCESS_MAX_AGE_MS}. */
export function createHttpsKubeClient(load: () => KubeAccess, nowMs: () => number = () => performance.now()): HttpsKubeClient {
  let pool = openPool(load(), nowMs());
  const current = (): Pool => {
    if (nowMs() - pool.since < ACCESS_MAX_AGE_MS) return pool;
    let fresh: KubeAccess;
    try {
      fresh = load();
    } catch {
      // Unreadable now (a file mid-rotation): keep the working pool and try again at the next request.
      return pool;
    }
    if (isSameTls(fresh, pool.access)) {
      pool = { ...pool, access: fresh, since: nowMs() };
      return pool;
    }
    // Rotated TLS material: a new pool; the old one's requests in flight get a minute, then its sockets close
    // (a watch on it ends and its informer resumes from its resource version).
    const old = pool.agent;
    setTimeout(() => old.destroy(), 60_000).unref();
    pool = openPool(fresh, nowMs());
    return pool;
  };
  const headersOf = (p: Pool): Record<string, string> => {
    const auth = p.access.auth;
    if (auth.kind === "token") return { authorization: `Bearer ${auth.token}` };
    if (auth.kind === "basic") return { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}` };
    if (auth.kind === "tokenFile") {
      if (!p.token || nowMs() - p.token.at >= TOKEN_FILE_MAX_AGE_MS) p.token = { value: readFileSync(auth.file, "utf8").trim(), at: nowMs() };
      return { authorization: `Bearer ${p.token.value}` };
    }
    return {};
  };
  const open = (method: string, path: string, opts: RequestOptions, signal: AbortSignal | undefined): Promise<IncomingMessage> => {
    const p = current();
    const url = new URL(p.access.server + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const body = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const headers: Record<string, string | number> = { accept: opts.accept ?? "application/json", ...headersOf(p) };
    if (body) Object.assign(headers, { "content-type": opts.contentType ?? "application/json", "content-length": body.byteLength });
    const send = url.protocol === "http:" ? httpRequest : httpsRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, { method, headers, agent: p.agent, ...(signal ? { signal } : {}) }, resolve);
      req.on("error", reject);
      req.end(body);
    });
  };
  return {
    ...(pool.access.namespace ? { namespace: pool.access.namespace } : {}),
    upgradeTarget(path: string): UpgradeTarget {
      const p = current();
      return { url: p.access.server.replace(/^http/, "ws") + path, tls: tlsOptionsOf(p.access), headers: headersOf(p) };
    },
    async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
      const what = `${method} ${path}`;
      const signal = AbortSignal.timeout(opts.timeoutMs ?? 30_000);
      const res = await open(method, path, opts, signal);
      const text = await readBounded(res, opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, what);
      if ((res.statusCode ?? 0) >= 400) throw parseApiError(res.statusCode ?? 0, text, what);
      return (text ? JSON.parse(text) : undefined) as T;
    },
    async watch(path: string, query: RequestOptions["query"], onEvent: WatchHandler, signal: AbortSignal): Promise<void> {
      const what = `GET ${path} (watch)`;
      const res = await open("GET", path, { query: { ...query, watch: true } }, signal);
      if ((res.statusCode ?? 0) >= 400) throw parseApiError(res.statusCode ?? 0, await readBounded(res, DEFAULT_MAX_RESPONSE_BYTES, what), what);
      await readLines(res, what, (line) => {
        const event = JSON.parse(line) as { type: string; object: unknown };
        onEvent(event.type, event.object);
      });
    },
  };
}

function isSameTls(a: KubeAccess, b: KubeAccess): boolean {
  const same = (x: Buffer | undefined, y: Buffer | undefined) => (x === undefined ? y === undefined : y !== undefined && x.equals(y));
  return a.server === b.server && same(a.ca, b.ca) && same(a.cert, b.cert) && same(a.key, b.key)
    && a.insecureSkipTlsVerify === b.insecureSkipTlsVerify && a.tlsServerName === b.tlsServerName;
}

function tlsOptionsOf(access: KubeAccess): TlsOptions {
  return {
    ...(access.ca ? { ca: access.ca } : {}), ...(access.cert ? { cert: access.cert } : {}), ...(access.key ? { key: access.key } : {}),
    rejectUnauthorized: !access.insecureSkipTlsVerify,
    ...(access.tlsServerName ? { servername: access.tlsServerName } : {}),
  };
}

function openPool(access: KubeAccess, since: number): Pool {
  if (access.server.startsWith("http:")) return { access, agent: new HttpAgent({ keepAlive: true }), since };
  // One secure context for the pool: without it every new connection parses the CA, certificate and key again
  // (3 % of the controller's CPU while a burst of Runs opened connections).
  const tls = tlsOptionsOf(access);
  const secureContext = createSecureContext({ ...(tls.ca ? { ca: tls.ca } : {}), ...(tls.cert ? { cert: tls.cert } : {}), ...(tls.key ? { key: tls.key } : {}) });
  const agent = new HttpsAgent({ keepAlive: true, ...tls, secureContext });
  return { access, agent, since };
}

/** The whole body as UTF-8, refused (and the response destroyed) once it passes `maxBytes`. */
async function readBounded(res: IncomingMessage, maxBytes: number, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      res.destroy();
      throw buildResponseTooLargeError(what, maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total).toString("utf8");
}

/** Calls `onLine` with each non-empty line of the body until it ends; a line past the cap is refused. */
async function readLines(res: IncomingMessage, what: string, onLine: (line: string) => void): Promise<void> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      // A line within one chunk (most events) is decoded from the chunk itself, not copied into a buffer first.
      let line: string;
      if (pending.length === 0) line = chunk.toString("utf8", start, nl);
      else {
        pending.push(chunk.subarray(start, nl));
        line = Buffer.concat(pending, pendingBytes + nl - start).toString("utf8");
        pending = [];
        pendingBytes = 0;
      }
      start = nl + 1;
      if (line.trim()) onLine(line);
    }
    if (start < chunk.byteLength) {
      pending.push(chunk.subarray(start));
      pendingBytes += chunk.byteLength - start;
      if (pendingBytes > MAX_WATCH_LINE_BYTES) {
        res.destroy();
        throw new KubeApiError(0, RESPONSE_TOO_LARGE, `${what}: a watch event exceeds ${MAX_WATCH_LINE_BYTES} bytes; refused`);
      }
    }
  }
}
