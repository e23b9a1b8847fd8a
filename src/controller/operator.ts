import { randomUUID } from "node:crypto";
import type { Server } from "node:net";
import { hostname } from "node:os";
import type { KubeClient } from "../kube/client.ts";
import { startLeaderElection, type LeaderElectionConfig, type LeaderElector } from "../kube/leader-election.ts";
import { componentLogger, type Logger } from "../log/logger.ts";
import { createControllerMetrics, type ControllerMetrics } from "../metrics/controller-metrics.ts";
import type { PodSettings } from "../sandbox/pod-settings.ts";
import type { WebhookServer, WebhookServerOptions } from "./admission/webhook-server.ts";
import { buildMetricsApp, buildProbeApp, type MetricsSecurity } from "./http-apps.ts";
import { CONTROLLERS } from "./controllers.ts";
import { poolController } from "./pool/pool-controller.ts";
import type { ApprovalNotifier } from "./approval/approval-webhook.ts";
import { createManager, type Manager, type ManagerOptions } from "./manager.ts";

/** Where a server listens (port 0 picks a free one). */
export interface BindAddress {
  readonly host: string;
  readonly port: number;
}

/** How to run the operator process. */
export interface OperatorOptions {
  client: KubeClient;
  settings: PodSettings;
  workers: number;
  log: Logger;
  /** Where to serve metrics and probes; undefined serves nothing. */
  metricsAddress?: BindAddress;
  /** HTTPS and a token check for /metrics; undefined serves plain HTTP to anyone who can connect. */
  metricsSecurity?: MetricsSecurity;
  probeAddress?: BindAddress;
  /** Leader election; undefined runs the controllers at once (a single replica). */
  leaderElection?: Omit<LeaderElectionConfig, "identity"> & { identity?: string };
  /** Called when leadership is lost: the process must stop reconciling (the CLI exits). */
  onLostLeadership?: () => void;
  /** How long consumed, orphaned, stale and invalid Approvals are kept (default one hour). */
  approvalTtlMs?: number;
  /** The validating webhook (served by every replica, leader or not); undefined serves none. */
  webhook?: WebhookServerOptions;
  /** Warm pools: run the pool controller, and let Runs adopt its pods (off by default). */
  warmPools?: boolean;
  /** How long a pool pod's identity or claim may be without its pod before the pool collects it (default one minute). */
  poolLeftoverGraceMs?: number;
  /** The approval webhook of pending prompts (absent: none). */
  approvalNotifier?: ApprovalNotifier | undefined;
}

/** A running operator. */
export interface Operator {
  readonly manager: Manager;
  readonly metrics: ControllerMetrics;
  /** The bound `host:port` of the metrics and probe servers (port 0 picks a free one). */
  readonly addresses: { metrics?: string; probes?: string; webhook?: string };
  /** The validating webhook, when served. */
  readonly webhook?: WebhookServer;
  isLeader(): boolean;
  /** Graceful shutdown: stop workers, release the lease, close servers and watches. */
  stop(): Promise<void>;
}

async function listen(server: Server, { host, port }: BindAddress): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address();
  return `${host}:${typeof bound === "object" && bound ? bound.port : port}`;
}

/** Stops accepting, and resolves once the connections in use have ended (idle keep-alive ones are closed). */
function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** The manager's options that are set only when the operator's are (exactOptionalPropertyTypes). */
function optionalManagerOptions(opts: OperatorOptions): Pick<ManagerOptions, "approvalTtlMs" | "warmPools" | "poolLeftoverGraceMs" | "approvalNotifier"> {
  return {
    ...(opts.approvalTtlMs !== undefined ? { approvalTtlMs: opts.approvalTtlMs } : {}),
    ...(opts.warmPools ? { warmPools: true } : {}),
    ...(opts.poolLeftoverGraceMs !== undefined ? { poolLeftoverGraceMs: opts.poolLeftoverGraceMs } : {}),
    ...(opts.approvalNotifier === undefined ? {} : { approvalNotifier: opts.approvalNotifier }),
  };
}

/** Start caches, servers and (once leading) the controllers. */
export async function startOperator(opts: OperatorOptions): Promise<Operator> {
  const metrics = createControllerMetrics(opts.leaderElection?.name);
  const monotonicMs = () => performance.now();
  let elector: LeaderElector | undefined;
  const isLeader = () => (elector ? elector.isLeader() : true);
  const manager = createManager({
    controllers: opts.warmPools ? [...CONTROLLERS, poolController] : CONTROLLERS,
    client: opts.client, settings: opts.settings, workers: opts.workers, log: opts.log, metrics,
    eventInstance: opts.leaderElection?.identity ?? hostname(),
    nowMs: () => Date.now(), monotonicMs, newId: () => randomUUID(), isLeader,
    ...optionalManagerOptions(opts),
  });
  const apps: Server[] = [];
  const addresses: { metrics?: string; probes?: string; webhook?: string } = {};
  // Loaded only when served: the webhook's parsers and its HTTPS app are not part of a controller without one.
  const webhook = opts.webhook
    ? await (await import("./admission/webhook-server.ts")).startWebhookServer(opts.webhook, { client: opts.client, log: componentLogger(opts.log, "webhook"), nowMs: () => Date.now() })
    : undefined;
  if (webhook) addresses.webhook = webhook.address;
  if (opts.metricsAddress) {
    const app = buildMetricsApp(metrics.registry, opts.metricsSecurity);
    apps.push(app);
    addresses.metrics = await listen(app, opts.metricsAddress);
  }
  if (opts.probeAddress) {
    const app = buildProbeApp({ ready: () => manager.synced() });
    apps.push(app);
    addresses.probes = await listen(app, opts.probeAddress);
  }
  await manager.startCaches();
  const log = componentLogger(opts.log, "leader-election");
  if (opts.leaderElection) {
    const identity = opts.leaderElection.identity ?? `${randomUUID()}`;
    elector = startLeaderElection({ ...opts.leaderElection, identity }, {
      client: opts.client,
      monotonicMs,
      wallClock: () => new Date(),
      onStartedLeading: () => {
        log.info({ identity, lease: `${opts.leaderElection!.namespace}/${opts.leaderElection!.name}` }, "acquired the lease");
        metrics.leader(true);
        manager.startWorkers();
      },
      onStoppedLeading: () => {
        log.error({ identity }, "lost the lease");
        metrics.leader(false);
        opts.onLostLeadership?.();
      },
      onError: (err) => log.warn({ err }, "lease request failed"),
    });
  } else {
    metrics.leader(true);
    manager.startWorkers();
  }
  return {
    manager,
    metrics,
    addresses,
    ...(webhook ? { webhook } : {}),
    isLeader,
    async stop() {
      await manager.stop();
      if (elector) {
        await elector.stop();
        metrics.leader(false);
        log.info("released the lease");
      }
      await Promise.all([...apps.map(close), webhook?.stop()]);
    },
  };
}
