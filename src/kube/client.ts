import { HttpMethod, IsomorphicFetchHttpLibrary, KubeConfig, RequestContext, Watch } from "@kubernetes/client-node";
import { readBoundedText } from "../io/bounded-text.ts";
import { buildResponseTooLargeError, DEFAULT_MAX_RESPONSE_BYTES } from "./bounded-body.ts";
import { parseApiError } from "./errors.ts";

/** Options of one request. */
export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** Default `application/json`; a metadata-only read asks for `PartialObjectMetadata`. */
  accept?: string;
  /** Default 30 s: a request never hangs a worker forever while the API server restarts. */
  timeoutMs?: number;
  /** Cap on the response body (default {@link DEFAULT_MAX_RESPONSE_BYTES}); a larger one is refused, not read. */
  maxResponseBytes?: number;
}

/** Called with each watch event's type (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`) and object. */
export type WatchHandler = (type: string, object: unknown) => void;

/**
 * A thin REST client over the kubeconfig: any path, any verb, any content type, JSON in and out. Two make it:
 * {@link createKubeClient} over @kubernetes/client-node's KubeConfig (for credentials that need its plugins), and
 * `createHttpsKubeClient` (https-client.ts) on node:https, which loads none of that library and opens pods/exec
 * WebSockets itself (`connectKube` picks).
 */
export interface KubeClient {
  /** The kubeconfig context's namespace, when it names one. */
  readonly namespace?: string;
  request<T = unknown>(method: keyof typeof HttpMethod, path: string, opts?: RequestOptions): Promise<T>;
  /** Streams a watch of `path` until the server ends it (resolves), it fails (rejects) or `signal` aborts it. */
  watch(path: string, query: RequestOptions["query"], onEvent: WatchHandler, signal: AbortSignal): Promise<void>;
}

/** A {@link KubeClient} over the library's KubeConfig, which the library's Exec (pods/exec, pod-exec.ts) takes too. */
export interface LibraryKubeClient extends KubeClient {
  readonly config: KubeConfig;
}

/**
 * Load the kubeconfig: an explicit file, else `KUBECONFIG`, else `~/.kube/config`, else the in-cluster account;
 * `context` (kubectl's `--context`) replaces its current context and must exist.
 */
export function loadKubeConfig(file?: string, context?: string): KubeConfig {
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  if (context !== undefined) {
    if (!kc.getContextObject(context)) throw new Error(`context '${context}' is not in the kubeconfig`);
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) throw new Error("no Kubernetes cluster configured (set --kubeconfig or KUBECONFIG, or run in a cluster)");
  return kc;
}

type Dispatcher = NonNullable<ReturnType<RequestContext["getDispatcher"]>>;

/** How long one connection pool serves before a fresh one picks up rotated TLS material (CA, client certificate). */
export const DISPATCHER_MAX_AGE_MS = 5 * 60_000;

/**
 * One connection pool for many requests. client-node builds a new undici Agent on every
 * `applySecurityAuthentication`, so without this each request paid a TCP connection, a TLS handshake and a
 * new SecureContext (about 40 % of the controller's CPU under load, and most of its RSS). Headers (tokens)
 * still come fresh from each call; only the pool is kept, and replaced after `maxAgeMs`.
 */
export function createDispatcherReuse(nowMs: () => number, maxAgeMs = DISPATCHER_MAX_AGE_MS): (fresh: Dispatcher | undefined) => Dispatcher | undefined {
  let current: { dispatcher: Dispatcher; since: number } | undefined;
  return (fresh) => {
    if (fresh === undefined) return undefined;
    if (current && nowMs() - current.since < maxAgeMs) return current.dispatcher;
    // The old pool finishes its requests in flight, then closes its connections.
    if (current) void current.dispatcher.close().catch(() => undefined);
    current = { dispatcher: fresh, since: nowMs() };
    return fresh;
  };
}

/** Build a client for `kc`'s current context. */
export function createKubeClient(kc: KubeConfig): LibraryKubeClient {
  const http = new IsomorphicFetchHttpLibrary();
  const server = (kc.getCurrentCluster()?.server ?? "").replace(/\/+$/, "");
  const reuse = createDispatcherReuse(() => performance.now());
  const namespace = kc.getContextObject(kc.getCurrentContext())?.namespace;
  const watcher = new Watch(kc);
  return {
    config: kc,
    ...(namespace ? { namespace } : {}),
    watch: (path, query, onEvent, signal) => new Promise<void>((resolve, reject) => {
      const params = Object.fromEntries(Object.entries(query ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string | number | boolean>;
      const done = (err: unknown) => (err && !signal.aborted ? reject(err as Error) : resolve());
      watcher.watch(path, params, onEvent, done).then((ctl) => {
        if (signal.aborted) ctl.abort();
        else signal.addEventListener("abort", () => ctl.abort(), { once: true });
      }, reject);
    }),
    async request<T>(method: keyof typeof HttpMethod, path: string, opts: RequestOptions = {}): Promise<T> {
      const url = new URL(server + path);
      for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      const ctx = new RequestContext(url.toString(), HttpMethod[method]);
      await kc.applySecurityAuthentication(ctx);
      const dispatcher = reuse(ctx.getDispatcher());
      if (dispatcher) ctx.setDispatcher(dispatcher);
      ctx.setHeaderParam("Accept", opts.accept ?? "application/json");
      if (opts.body !== undefined) {
        ctx.setHeaderParam("Content-Type", opts.contentType ?? "application/json");
        ctx.setBody(JSON.stringify(opts.body));
      }
      ctx.setSignal(AbortSignal.timeout(opts.timeoutMs ?? 30_000));
      const res = await http.send(ctx).toPromise();
      const maxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
      const text = await readBoundedText(res.body.stream() as ReadableStream<Uint8Array> | null, maxBytes, () => buildResponseTooLargeError(`${method} ${path}`, maxBytes));
      if (res.httpStatusCode >= 400) throw parseApiError(res.httpStatusCode, text, `${method} ${path}`);
      return (text ? JSON.parse(text) : undefined) as T;
    },
  };
}
