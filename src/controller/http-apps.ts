import { fastify, type FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import type { MetricsAccess } from "./metrics-auth.ts";

/** How the metrics endpoint is secured: TLS, and a check of each request's bearer token. */
export interface MetricsSecurity {
  tls: { key: Buffer; cert: Buffer };
  authorize: (authorization: string | undefined, path: string) => Promise<MetricsAccess>;
}

const ACCESS_TEXT: Record<Exclude<MetricsAccess, 200>, string> = { 401: "Unauthorized", 403: "Forbidden", 500: "authorization check failed" };

/** The Prometheus scrape endpoint (never listens by itself); with `security`, HTTPS and authenticated. */
export function buildMetricsApp(registry: Registry, security?: MetricsSecurity): FastifyInstance {
  const app = (security ? fastify({ logger: false, https: security.tls }) : fastify({ logger: false })) as FastifyInstance;
  if (security) {
    app.addHook("onRequest", async (req, reply) => {
      const access = await security.authorize(req.headers.authorization, req.url.split("?")[0] ?? req.url);
      if (access !== 200) return reply.code(access).type("text/plain").send(ACCESS_TEXT[access]);
    });
  }
  app.get("/metrics", async (_req, reply) => {
    reply.header("content-type", registry.contentType);
    return registry.metrics();
  });
  return app;
}

/** The kubelet probes: `/healthz` while the process serves, `/readyz` only after every cache has synced. */
export function buildProbeApp(checks: { ready: () => boolean }): FastifyInstance {
  const app = fastify({ logger: false });
  app.get("/healthz", async () => "ok");
  app.get("/readyz", async (_req, reply) => {
    if (checks.ready()) return "ok";
    reply.code(503);
    return "caches not synced";
  });
  return app;
}
