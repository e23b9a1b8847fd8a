// The controller bench's own API client: node:https with one keep-alive agent and the kubeconfig's client
// certificate, and raw watches whose events are timestamped as they arrive. It is independent of src/kube on
// purpose, so a change to the controller's client never changes how the bench loads the API server.
import { Agent, request } from "node:https";
import { readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";

/** A small JSON client for one cluster. */
export interface BenchKube {
  /** Sends one request; resolves with the status and parsed body (errors are not thrown: the caller decides). */
  send<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** Like `send`, but throws unless the status is 2xx (or listed in `allow`). */
  call<T = unknown>(method: string, path: string, body?: unknown, allow?: readonly number[]): Promise<T>;
  /** GETs `path` as text (the API server's /metrics), throwing unless 200. */
  text(path: string): Promise<string>;
  /** Opens a watch; `onEvent` gets each event with `performance.now()` at its arrival. */
  watch(path: string, onEvent: (type: string, obj: WatchedObject, atMs: number) => void): { stop(): void };
  close(): void;
}

/** The part of a watched object the bench reads. */
export interface WatchedObject {
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; ownerReferences?: { controller?: boolean; kind: string; name: string }[] };
}

const material = (data: string | undefined, file: string | undefined) => (data ? Buffer.from(data, "base64") : file ? readFileSync(file) : undefined);

/** A client for the current context of the kubeconfig at `path` (client-certificate auth, as the harness writes it). */
export function createBenchKube(path: string): BenchKube {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user) throw new Error(`${path}: no current cluster or user`);
  const server = new URL(cluster.server);
  const agent = new Agent({
    keepAlive: true, maxSockets: 64,
    ca: material(cluster.caData, cluster.caFile), cert: material(user.certData, user.certFile), key: material(user.keyData, user.keyFile),
  });
  const streams = new Set<{ destroy(): void }>();

  const send = <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request({
      agent, host: server.hostname, port: server.port, path, method,
      headers: { accept: "application/json", ...(payload ? { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } : {}) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        try {
          resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : undefined) as T });
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    req.on("error", reject);
    req.end(payload);
  });

  const text = (path: string): Promise<string> => new Promise((resolve, reject) => {
    const req = request({ agent, host: server.hostname, port: server.port, path, method: "GET" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString("utf8")) : reject(new Error(`GET ${path}: ${res.statusCode}`))));
    });
    req.on("error", reject);
    req.end();
  });

  return {
    send,
    text,
    async call<T>(method: string, path: string, body?: unknown, allow: readonly number[] = []): Promise<T> {
      const r = await send<T>(method, path, body);
      if ((r.status < 200 || r.status >= 300) && !allow.includes(r.status)) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      return r.body;
    },
    watch(path, onEvent) {
      let buffer = "";
      const sep = path.includes("?") ? "&" : "?";
      const req = request({ agent, host: server.hostname, port: server.port, path: `${path}${sep}watch=1&allowWatchBookmarks=false`, method: "GET", headers: { accept: "application/json" } }, (res) => {
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          const atMs = performance.now();
          buffer += chunk;
          for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
            const line = buffer.slice(0, nl);
            buffer = buffer.slice(nl + 1);
            if (line.trim()) {
              const event = JSON.parse(line) as { type: string; object: WatchedObject };
              onEvent(event.type, event.object, atMs);
            }
          }
        });
      });
      req.on("error", () => {});
      req.end();
      streams.add(req);
      return { stop: () => req.destroy() };
    },
    close() {
      for (const s of streams) s.destroy();
      agent.destroy();
    },
  };
}
