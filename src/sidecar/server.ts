// The running sidecar: the one built by build-sidecar.ts, its app listening on loopback, metrics served on a separate
// listener (to one bearer token only), the policy watched for reloads, and a clean stop (pending calls refused,
// records flushed).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../log/logger.ts";
import type { SidecarMetrics } from "../metrics/sidecar-metrics.ts";
import { buildSidecar, type CurrentStage, type ListenAddress, type SidecarServerOptions } from "./build-sidecar.ts";
import { computeCurrentStage } from "./core/enforcement.ts";
import { buildSidecarApp, computeStatus } from "./http/app.ts";
import type { SidecarAppDeps } from "./http/app-deps.ts";
import { createMetricsTokenCheck, METRICS_TOKEN_DIGEST } from "./http/metrics-token.ts";
import type { ReloadResult } from "./core/policy-holder.ts";
import { computeAllowedHosts } from "./http/request-guard.ts";
import type { RunStatusSnapshot } from "./core/status-snapshot.ts";
import type { ToolGateway } from "./core/tool-gateway.ts";
import type { RunPolicy } from "../api/run-policy.ts";

/** A started sidecar. */
export interface RunningSidecar {
  readonly url: string;
  readonly metricsUrl: string | undefined;
  readonly deps: SidecarAppDeps;
  readonly metrics: SidecarMetrics;
  status(): RunStatusSnapshot;
  /** The run policy in force and the Run's current stage. */
  currentStage(): CurrentStage;
  /** Loads the policy source again now when it changed (a resumed snapshot), as the periodic check would. */
  reloadPolicy(): ReloadResult;
  close(): Promise<void>;
}

function urlOf(address: AddressInfo): string {
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

function startMetricsServer(metrics: SidecarMetrics, at: ListenAddress, allowed: (authorization: string | undefined) => boolean, log: Logger): Promise<Server> {
  const server = createServer((req, res) => {
    // Checked before the path: an unauthenticated client learns nothing, not even which paths exist.
    if (!allowed(req.headers.authorization)) {
      res.writeHead(401, { "www-authenticate": "Bearer", "content-type": "text/plain" }).end("Unauthorized");
      return;
    }
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
      (err: unknown) => {
        log.error({ err }, "metrics collection failed");
        res.writeHead(500).end();
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(at.port, at.host, () => resolve(server));
  });
}

/** Says once the servers are listed whether web_search has its backend; a server without the named tool is the policy's mistake. */
function reportSearchBackend(w: RunPolicy["webSearch"], gateway: ToolGateway, log: Logger): void {
  if (w === undefined || gateway.lists(w.server, w.tool)) return;
  const state = gateway.servers().find((s) => s.name === w.server);
  const why = state?.offered === true ? `webSearch.tool: MCP server '${w.server}' lists no tool '${w.tool}'` : `webSearch.server: MCP server '${w.server}' is not connected (${state?.message ?? "not declared"})`;
  log.error({ server: w.server, tool: w.tool }, `web_search is not offered: ${why}`);
}

/** Starts a sidecar; a policy that does not load is an error naming the file and entry. */
export async function startSidecarServer(opts: SidecarServerOptions): Promise<{ ok: true; sidecar: RunningSidecar } | { ok: false; error: string }> {
  if (opts.metricsListen && !METRICS_TOKEN_DIGEST.test(opts.metricsTokenSha256 ?? "")) {
    return { ok: false, error: "a metrics listener needs the SHA-256 of its scrape token (--metrics-token-sha256): /metrics is never served unauthenticated" };
  }
  const built = buildSidecar(opts);
  if (!built.ok) return built;
  const { deps, metrics, holder, service, gateway, audit, journal, guard } = built.sidecar;
  // The servers are connected to and listed now, in the background: a call to one of their tools waits for it.
  void gateway.ready().then(() => reportSearchBackend(holder.current().runPolicy.webSearch, gateway, opts.log));
  metrics.taint(deps.session.context.level(), holder.current().runPolicy.taint.tracking);
  const app = buildSidecarApp(deps);
  if (opts.beforeListen !== undefined) {
    // Ready first (its plugins loaded), so the listen right after the hook is only the port's bind.
    await app.ready();
    await opts.beforeListen(deps.binding, deps.log);
  }
  await app.listen({ host: opts.listen.host, port: opts.listen.port });
  // Until this line every request is refused (no Host is accepted yet).
  for (const h of computeAllowedHosts(opts.listen.host, app.server.address() as AddressInfo)) guard.hosts.add(h);
  const metricsServer = opts.metricsListen ? await startMetricsServer(metrics, opts.metricsListen, createMetricsTokenCheck(opts.metricsTokenSha256!), opts.log) : undefined;
  holder.watch(opts.reloadIntervalMs);
  const url = urlOf(app.server.address() as AddressInfo);
  const metricsUrl = metricsServer ? `${urlOf(metricsServer.address() as AddressInfo)}/metrics` : undefined;
  let closing: Promise<void> | undefined;
  return {
    ok: true,
    sidecar: {
      url, metricsUrl, deps, metrics,
      status: () => computeStatus(deps),
      currentStage: () => ({ runPolicy: holder.current().runPolicy, stage: computeCurrentStage(holder.current(), deps.session.stageIndex).stage }),
      reloadPolicy: () => holder.check(),
      close() {
        closing ??= (async () => {
          holder.stop();
          service.stop();
          await app.close();
          if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
          await gateway.close();
          audit.close();
          journal.close();
          // The spans of the last calls are sent before the process ends (a collector that is down costs its timeout, within the stop's grace).
          await opts.tracing?.shutdown();
        })();
        return closing;
      },
    },
  };
}
