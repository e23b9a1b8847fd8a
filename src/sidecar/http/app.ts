// The sidecar's HTTP API as a fastify app that never listens (the server module does): JSON in and out under
// `/v1`, request bodies capped, and every refusal a 4xx/5xx with `{decision: "deny", code, message}`.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from "fastify";
import { registerContextRoutes } from "./context-routes.ts";
import { buildRefusalBody, MAX_REQUEST_BODY_BYTES } from "../../api/sidecar-contract.ts";
import { refuse } from "./refusal-reply.ts";
import { installRequestGuard } from "./request-guard.ts";
import type { SidecarAppDeps } from "./app-deps.ts";
import { buildRunStatusSnapshot, type RunStatusSnapshot } from "../core/status-snapshot.ts";
import { registerSeedRoutes } from "./seed-routes.ts";
import { registerToolCallRoutes } from "./tool-call-routes.ts";
import { registerMcpRoutes } from "../mcp/mcp-server.ts";
import { registerBindingRoute } from "./binding-route.ts";
import { createLazySchemaCompilers } from "./lazy-schema-compilers.ts";

/** The snapshot served on `/v1/status` (and written to the Run's status in a cluster). */
export function computeStatus(deps: SidecarAppDeps): RunStatusSnapshot {
  const enf = deps.policy.current();
  const { index, stage } = deps.service.currentStage(enf);
  return buildRunStatusSnapshot({
    run: deps.runName,
    agent: enf.runPolicy.agent.key,
    mode: enf.mode,
    stage: { index, name: stage.name },
    tracking: enf.runPolicy.taint.tracking,
    level: deps.session.context.level(),
    counts: deps.service.decisionCounts,
    pending: deps.approvals.list(),
    policyError: deps.policy.lastError,
    result: deps.service.result,
    mcpServers: deps.service.gateway?.servers(),
    runtimeWarnings: deps.warnings.list(),
    policyFlips: deps.rollout?.tally(),
  });
}

const APP_OPTIONS = { bodyLimit: MAX_REQUEST_BODY_BYTES, return503OnClosing: true, forceCloseConnections: true } as const;

/** Each instance's options: the above, and fastify's schema compilers loaded only if a route declares a schema (none does). */
const appOptions = () => ({ ...APP_OPTIONS, schemaController: { compilersFactory: createLazySchemaCompilers() } });

/**
 * Builds an app and drops it: the framework's first instance in a process costs a few hundred milliseconds (what it
 * loads and compiles on first use), which a warm pool's sidecar pays while it waits unbound rather than in its
 * takeover.
 */
export async function warmUpSidecarApp(): Promise<void> {
  const app = Fastify({ ...appOptions(), logController: new LogController({ disableRequestLogging: true }) });
  app.get("/v1/healthz", async () => ({ status: "ok" }));
  await app.ready();
  await app.close();
}

/** Builds the app; call `listen` on it elsewhere (or `inject` in tests). */
export function buildSidecarApp(deps: SidecarAppDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    // Decisions are logged by the service, with the call id; per-request lines would only repeat them.
    logController: new LogController({ disableRequestLogging: true }),
    ...appOptions(),
  });
  app.setErrorHandler((err: FastifyError, _req, reply) => {
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return refuse(reply, buildRefusalBody("request-too-large"));
    }
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
      // The framework's own 4xx (malformed JSON, an unsupported media type) keeps its status.
      return reply.code(err.statusCode).send(buildRefusalBody("invalid-request", err.message));
    }
    deps.log.error({ err }, "request failed");
    // A bug must never read as an allow: the client sees a 500 refusal.
    return refuse(reply, buildRefusalBody("internal-error"));
  });
  installRequestGuard(app, deps.guard);
  app.setNotFoundHandler((req, reply) => refuse(reply, buildRefusalBody("not-found", req.method, req.url)));
  app.get("/v1/healthz", async () => ({ status: "ok", policy: deps.policy.lastError === undefined ? { ok: true } : { ok: false, error: deps.policy.lastError } }));
  app.get("/v1/status", async () => computeStatus(deps));
  registerToolCallRoutes(app, deps);
  registerContextRoutes(app, deps);
  registerSeedRoutes(app, deps);
  registerMcpRoutes(app, deps);
  registerBindingRoute(app, deps);
  return app;
}
