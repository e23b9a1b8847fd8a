// The controller's two small HTTP servers, on node:http and node:https: /metrics for Prometheus and the kubelet's
// probes. Three GET routes need no framework, and fastify's module graph is about 7 MiB of every controller's
// resident set (docs/benchmarks-history.md, "Controller memory: the profile and what changed"). The validating
// webhook, served only when configured, keeps fastify.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Server } from "node:net";
import type { Registry } from "prom-client";
import type { MetricsAccess } from "./metrics-auth.ts";

/** How the metrics endpoint is secured: TLS, and a check of each request's bearer token. */
export interface MetricsSecurity {
  tls: { key: Buffer; cert: Buffer };
  authorize: (authorization: string | undefined, path: string) => Promise<MetricsAccess>;
}

const ACCESS_TEXT: Record<Exclude<MetricsAccess, 200>, string> = { 401: "Unauthorized", 403: "Forbidden", 500: "authorization check failed" };
const TEXT = "text/plain; charset=utf-8";

/** An answer: status, content type and body. */
type Answer = { status: number; type: string; body: string };
/** The routes of one server: GET (and HEAD) of a path; anything else is 404. */
type Routes = Record<string, () => Answer | Promise<Answer>>;

const text = (status: number, body: string): Answer => ({ status, type: TEXT, body });

function send(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
  res.writeHead(answer.status, { "content-type": answer.type, "content-length": Buffer.byteLength(answer.body) });
  res.end(req.method === "HEAD" ? undefined : answer.body);
}

/** A server for `routes`, each request checked by `guard` first when there is one; a failure answers 500, never 200. */
function serve(routes: Routes, opts: { tls?: { key: Buffer; cert: Buffer }; guard?: (req: IncomingMessage, path: string) => Promise<Answer | undefined> } = {}): Server {
  const handle = async (req: IncomingMessage): Promise<Answer> => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const refused = await opts.guard?.(req, path);
    if (refused) return refused;
    const route = Object.hasOwn(routes, path) && (req.method === "GET" || req.method === "HEAD") ? routes[path] : undefined;
    return route ? await route() : text(404, `${req.method ?? ""} ${path} not found`);
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req).then((answer) => send(req, res, answer), () => send(req, res, text(500, "internal error")));
  };
  return opts.tls ? createHttpsServer(opts.tls, onRequest) : createHttpServer(onRequest);
}

/** The Prometheus scrape endpoint (never listens by itself); with `security`, HTTPS and authenticated. */
export function buildMetricsApp(registry: Registry, security?: MetricsSecurity): Server {
  const routes: Routes = { "/metrics": async () => ({ status: 200, type: registry.contentType, body: await registry.metrics() }) };
  if (!security) return serve(routes);
  return serve(routes, {
    tls: security.tls,
    guard: async (req, path) => {
      const access = await security.authorize(req.headers.authorization, path);
      return access === 200 ? undefined : text(access, ACCESS_TEXT[access]);
    },
  });
}

/** The kubelet probes: `/healthz` while the process serves, `/readyz` only after every cache has synced. */
export function buildProbeApp(checks: { ready: () => boolean }): Server {
  return serve({
    "/healthz": () => text(200, "ok"),
    "/readyz": () => (checks.ready() ? text(200, "ok") : text(503, "caches not synced")),
  });
}
