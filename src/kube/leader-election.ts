import { formatMicroTime } from "../api/time.ts";
import type { KubeClient } from "./client.ts";
import { isApiStatus } from "./errors.ts";
import { getObject, type KubeObject } from "./objects.ts";
import { buildPath, RESOURCES } from "./resources.ts";

/** Timing of the election, as client-go's LeaderElectionConfig. */
export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  identity: string;
  /** How long a lease is valid after its last renewal, as observed by others. */
  leaseDurationMs: number;
  /** The leader gives up if it has not renewed for this long (less than the lease duration). */
  renewDeadlineMs: number;
  /** How often to try to acquire or renew. */
  retryPeriodMs: number;
}

/** What the elector needs from the outside world. */
export interface LeaderElectionPorts {
  client: KubeClient;
  /** Monotonic milliseconds, for expiry as observed locally (never compare clocks across machines). */
  monotonicMs: () => number;
  /** Wall-clock time for the Lease's own timestamps. */
  wallClock: () => Date;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  onError?: (err: unknown) => void;
}

type Lease = KubeObject & {
  metadata: { resourceVersion?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
};

/** A running election: `isLeader()` is true only while the lease is ours and renewed within the deadline. */
export interface LeaderElector {
  isLeader(): boolean;
  /** Stop campaigning; a leader releases the lease so a successor need not wait for it to expire. */
  stop(): Promise<void>;
}

/**
 * Leader election over a `coordination.k8s.io/v1` Lease (client-node has none). Every write carries the
 * resourceVersion it was decided on, so two candidates can never both succeed in taking the same lease; a lease
 * held by another counts as expired only when its record has not changed for a whole lease duration, measured on
 * our own monotonic clock.
 */
export function startLeaderElection(cfg: LeaderElectionConfig, ports: LeaderElectionPorts): LeaderElector {
  const res = RESOURCES.lease;
  let leading = false;
  let stopped = false;
  let lastRenew = 0;
  let observed: { record: string; at: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  const spec = (prev: Lease["spec"], now: Date, transition: boolean) => buildLeaseSpec(cfg, prev, now, transition);

  /** `ours`: we hold it now; `other`: someone else validly holds it; `lost`: a race we lost (try again). */
  async function tryAcquireOrRenew(): Promise<"ours" | "other" | "lost"> {
    const now = ports.wallClock();
    const lease = await getObject<Lease>(ports.client, res, cfg.namespace, cfg.name);
    if (!lease) {
      const body = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: cfg.name, namespace: cfg.namespace }, spec: spec(undefined, now, true) };
      return writeOrLose(() => ports.client.request("POST", buildPath(res, cfg.namespace), { body }));
    }
    const holder = lease.spec?.holderIdentity ?? "";
    const record = JSON.stringify([holder, lease.spec?.renewTime, lease.metadata.resourceVersion]);
    if (observed?.record !== record) observed = { record, at: ports.monotonicMs() };
    const durationMs = (lease.spec?.leaseDurationSeconds ?? Math.ceil(cfg.leaseDurationMs / 1000)) * 1000;
    const expired = ports.monotonicMs() - observed.at >= durationMs;
    if (holder !== "" && holder !== cfg.identity && !expired) return "other";
    const body = { ...lease, spec: spec(lease.spec, now, holder !== cfg.identity) };
    return writeOrLose(() => ports.client.request("PUT", buildPath(res, cfg.namespace, cfg.name), { body }));
  }

  async function tick(): Promise<void> {
    if (stopped) return;
    // Counted from before the write: others start their expiry clock no earlier than the write itself.
    const started = ports.monotonicMs();
    let outcome: "ours" | "other" | "lost" | "error" = "error";
    try {
      outcome = await tryAcquireOrRenew();
    } catch (err) {
      ports.onError?.(err);
    }
    if (stopped) return;
    if (outcome === "ours") {
      lastRenew = started;
      if (!leading) {
        leading = true;
        ports.onStartedLeading();
      }
    } else if (leading && (outcome === "other" || ports.monotonicMs() - lastRenew >= cfg.renewDeadlineMs)) {
      leading = false;
      ports.onStoppedLeading();
    }
    timer = setTimeout(() => {
      inFlight = tick();
    }, cfg.retryPeriodMs);
  }

  inFlight = tick();

  return {
    isLeader: () => leading && ports.monotonicMs() - lastRenew < cfg.renewDeadlineMs,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
      if (!leading) return;
      leading = false;
      await releaseLease(cfg, ports);
    },
  };
}

/** The Lease's spec as `cfg.identity` holds it from `now`; `transition` when it takes the lease from another (or no one). */
function buildLeaseSpec(cfg: LeaderElectionConfig, prev: Lease["spec"], now: Date, transition: boolean): Lease["spec"] {
  return {
    holderIdentity: cfg.identity,
    leaseDurationSeconds: Math.max(1, Math.ceil(cfg.leaseDurationMs / 1000)),
    acquireTime: transition || !prev?.acquireTime ? formatMicroTime(now) : prev.acquireTime,
    renewTime: formatMicroTime(now),
    leaseTransitions: prev ? (prev.leaseTransitions ?? 0) + (transition ? 1 : 0) : 0,
  };
}

/** One write of the Lease at the version it was decided on: `ours` when it took, `lost` when another wrote first (409). */
async function writeOrLose(write: () => Promise<unknown>): Promise<"ours" | "lost"> {
  try {
    await write();
    return "ours";
  } catch (err) {
    if (isApiStatus(err, 409)) return "lost";
    throw err;
  }
}

/** Gives the lease up if it is still ours, so a successor need not wait for it to expire; a failure is only reported. */
async function releaseLease(cfg: LeaderElectionConfig, ports: LeaderElectionPorts): Promise<void> {
  try {
    const lease = await getObject<Lease>(ports.client, RESOURCES.lease, cfg.namespace, cfg.name);
    if (lease?.spec?.holderIdentity === cfg.identity) {
      const released = { ...lease, spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: formatMicroTime(ports.wallClock()) } };
      await ports.client.request("PUT", buildPath(RESOURCES.lease, cfg.namespace, cfg.name), { body: released });
    }
  } catch (err) {
    ports.onError?.(err);
  }
}
