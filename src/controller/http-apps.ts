import { fastify, type FastifyInstance } from "fastify";
import type { Registry } from "prom-client";

/** The Prometheus scrape endpoint (never listens by itself). */
export function buildMetricsApp(registry: Registry): FastifyInstance {
  const app = fastify({ logger: false });
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
