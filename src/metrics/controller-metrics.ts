import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { POOL_MISS_REASONS, type PoolMissReason } from "../api/pools.ts";
import type { NetworkEnforcementStatus } from "../api/status.ts";
import type { ErrorKind } from "../kube/errors.ts";
import { registerBuildInfo } from "./build-info-gauge.ts";

/** The controllers, as a closed label set. */
export type ControllerName = "agent" | "run" | "policy" | "approval" | "pool" | "records";
/** Reconcile outcomes, as controller-runtime labels them. */
export type ReconcileOutcome = "success" | "error" | "requeue_after";
/** Write verbs the controller makes, as a closed label set. */
export type WriteVerb = "apply" | "apply_status" | "create" | "replace" | "delete";

/** The controller's Prometheus metrics, under controller-runtime's names where one exists. */
export interface ControllerMetrics {
  readonly registry: Registry;
  reconciled(controller: ControllerName, outcome: ReconcileOutcome, seconds: number): void;
  /** A failed reconcile: `terminal` when retrying cannot help (controller-runtime's TerminalError), `panic` for a bug. */
  reconcileError(controller: ControllerName, kind: ErrorKind, how: { terminal: boolean; panic: boolean }): void;
  queueDepth(controller: ControllerName, depth: number): void;
  queueAdd(controller: ControllerName): void;
  queueRetry(controller: ControllerName): void;
  /** How long a key waited in the queue before a worker took it. */
  queueWait(controller: ControllerName, seconds: number): void;
  /** How long a worker held a key. */
  queueWork(controller: ControllerName, seconds: number): void;
  /** Where the in-flight keys' start times (monotonic ms) are read from, for unfinished work and the longest processor. */
  watchQueue(controller: ControllerName, inFlight: () => readonly number[], nowMs: () => number): void;
  /** The worker count of a controller (controller-runtime's max concurrent reconciles). */
  maxWorkers(controller: ControllerName, workers: number): void;
  activeWorkers(controller: ControllerName, delta: number): void;
  write(verb: WriteVerb, kind: string): void;
  leader(isLeader: boolean): void;
  /** One NetworkPolicy enforcement probe finished with this result. */
  networkProbe(result: NetworkEnforcementState): void;
  /** The operator's current view of NetworkPolicy enforcement (1 for the state it is in, 0 for the others). */
  networkEnforcement(state: NetworkEnforcementState): void;
  /** The warm pools' unbound pods, summed over every pool: ready and starting. */
  poolPods(counts: { ready: number; starting: number }): void;
  /** A Run adopted a pool pod. */
  poolAdoption(): void;
  /** A Run of an Agent with a pool started cold, and why. */
  poolMiss(reason: PoolMissReason): void;
  /** A pool is full again this many seconds after one of its adoptions. */
  poolRefill(seconds: number): void;
}

/** What the NetworkPolicy probe concluded, as a closed label set (the status field's values). */
type NetworkEnforcementState = NetworkEnforcementStatus["state"];
const ENFORCEMENT_STATES: readonly NetworkEnforcementState[] = ["Verified", "NotEnforced", "Unknown"];

const CONTROLLERS = ["agent", "run", "policy", "approval", "pool", "records"] as const satisfies readonly ControllerName[];

/** controller-runtime's reconcile-time buckets (pkg/internal/controller/metrics). */
export const RECONCILE_TIME_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
  1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
/** client-go's workqueue duration buckets: ExponentialBuckets(10e-9, 10, 12), 10 ns to 1,000 s. */
export const WORKQUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => Number((1e-8 * 10 ** i).toPrecision(1)));

/** The keys each controller's queue holds in flight, by controller, for the two gauges of work in progress. */
type InFlightWatch = Map<ControllerName, { inFlight: () => readonly number[]; nowMs: () => number }>;

/** `workqueue_unfinished_work_seconds` and `workqueue_longest_running_processor_seconds`, read from the watched queues when scraped. */
function registerInFlightGauges(registry: Registry, queueLabels: string[]): InFlightWatch {
  const registers = [registry];
  const watched: InFlightWatch = new Map();
  const inFlightAges = (c: ControllerName): number[] => {
    const w = watched.get(c);
    return w ? w.inFlight().map((start) => Math.max(0, (w.nowMs() - start) / 1000)) : [];
  };
  new Gauge({
    name: "workqueue_unfinished_work_seconds", labelNames: queueLabels, registers,
    help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
    collect() {
      for (const c of CONTROLLERS) this.set({ controller: c, name: c }, inFlightAges(c).reduce((a, b) => a + b, 0));
    },
  });
  new Gauge({
    name: "workqueue_longest_running_processor_seconds", labelNames: queueLabels, registers,
    help: "How many seconds has the longest running processor for workqueue been running.",
    collect() {
      for (const c of CONTROLLERS) this.set({ controller: c, name: c }, Math.max(0, ...inFlightAges(c)));
    },
  });
  return watched;
}

/** The warm pools' metrics (docs/controller.md, "Warm pools"), every series present from the start. */
function registerPoolMetrics(registry: Registry): Pick<ControllerMetrics, "poolPods" | "poolAdoption" | "poolMiss" | "poolRefill"> {
  const registers = [registry];
  const pods = new Gauge({ name: "leviath_pool_pods", help: "Unbound warm pool pods over every pool, by state (ready, starting)", labelNames: ["state"], registers });
  const adoptions = new Counter({ name: "leviath_pool_adoptions_total", help: "Runs that adopted a ready warm pool pod", registers });
  const misses = new Counter({ name: "leviath_pool_misses_total", help: "Runs of an Agent with a warm pool that started cold, by reason (no-ready-pod, not-eligible, claim-conflict)", labelNames: ["reason"], registers });
  const refill = new Histogram({
    name: "leviath_pool_refill_seconds", help: "From a Run's adoption of a warm pool pod until its pool is full again (ready pods = size)",
    buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300], registers,
  });
  for (const state of ["ready", "starting"]) pods.set({ state }, 0);
  for (const reason of POOL_MISS_REASONS) misses.inc({ reason }, 0);
  return {
    poolPods(counts) {
      pods.set({ state: "ready" }, counts.ready);
      pods.set({ state: "starting" }, counts.starting);
    },
    poolAdoption: () => adoptions.inc(),
    poolMiss: (reason) => misses.inc({ reason }),
    poolRefill: (seconds) => refill.observe(seconds),
  };
}

/** Create the registry and every metric (process metrics included). */
export function createControllerMetrics(leaseName = "leviath-operator"): ControllerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters fail `promtool check metrics`; the per-type gauge nodejs_active_resources stays.
  for (const misnamed of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) registry.removeSingleMetric(misnamed);
  const registers = [registry];
  registerBuildInfo(registry, "leviath_build_info", "The running build of the Leviath operator: version and Node.js version labels, value 1");
  const total = new Counter({ name: "controller_runtime_reconcile_total", help: "Total number of reconciliations per controller", labelNames: ["controller", "result"], registers });
  const errors = new Counter({ name: "controller_runtime_reconcile_errors_total", help: "Total number of reconciliation errors per controller", labelNames: ["controller"], registers });
  const terminal = new Counter({ name: "controller_runtime_terminal_reconcile_errors_total", help: "Total number of terminal reconciliation errors per controller", labelNames: ["controller"], registers });
  const panics = new Counter({ name: "controller_runtime_reconcile_panics_total", help: "Total number of reconciliation panics per controller", labelNames: ["controller"], registers });
  const errorsByKind = new Counter({ name: "leviath_reconcile_errors_total", help: "Reconciliation errors per controller and error kind (transient, invalid, forbidden, internal)", labelNames: ["controller", "error_kind"], registers });
  const time = new Histogram({
    name: "controller_runtime_reconcile_time_seconds", help: "Length of time per reconciliation per controller", labelNames: ["controller"], registers,
    buckets: RECONCILE_TIME_BUCKETS,
  });
  const maxConcurrent = new Gauge({ name: "controller_runtime_max_concurrent_reconciles", help: "Maximum number of concurrent reconciles per controller", labelNames: ["controller"], registers });
  // client-go's workqueue metrics as controller-runtime registers them: `name` and `controller` both the controller.
  const queueLabels = ["controller", "name"];
  const depth = new Gauge({ name: "workqueue_depth", help: "Current depth of workqueue", labelNames: queueLabels, registers });
  const adds = new Counter({ name: "workqueue_adds_total", help: "Total number of adds handled by workqueue", labelNames: queueLabels, registers });
  const retries = new Counter({ name: "workqueue_retries_total", help: "Total number of retries handled by workqueue", labelNames: queueLabels, registers });
  const queueDuration = new Histogram({ name: "workqueue_queue_duration_seconds", help: "How long in seconds an item stays in workqueue before being requested", labelNames: queueLabels, buckets: WORKQUEUE_BUCKETS, registers });
  const workDuration = new Histogram({ name: "workqueue_work_duration_seconds", help: "How long in seconds processing an item from workqueue takes", labelNames: queueLabels, buckets: WORKQUEUE_BUCKETS, registers });
  const watched = registerInFlightGauges(registry, queueLabels);
  const workers = new Gauge({ name: "controller_runtime_active_workers", help: "Number of currently used workers per controller", labelNames: ["controller"], registers });
  const writes = new Counter({ name: "leviath_api_writes_total", help: "Writes the controller sent to the API server, by verb and resource kind", labelNames: ["verb", "kind"], registers });
  const master = new Gauge({ name: "leader_election_master_status", help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master", labelNames: ["name"], registers });
  master.set({ name: leaseName }, 0);
  const probes = new Counter({ name: "leviath_network_probes_total", help: "NetworkPolicy enforcement probes the controller ran, by result (Verified, NotEnforced, Unknown)", labelNames: ["result"], registers });
  const enforcement = new Gauge({ name: "leviath_network_enforcement", help: "The controller's view of NetworkPolicy enforcement on this cluster: 1 for the current state (Verified, NotEnforced, Unknown), 0 for the others", labelNames: ["state"], registers });
  for (const s of ENFORCEMENT_STATES) {
    probes.inc({ result: s }, 0);
    enforcement.set({ state: s }, s === "Unknown" ? 1 : 0);
  }
  for (const c of CONTROLLERS) {
    for (const r of ["success", "error", "requeue_after"] as const) total.inc({ controller: c, result: r }, 0);
    errors.inc({ controller: c }, 0);
    terminal.inc({ controller: c }, 0);
    panics.inc({ controller: c }, 0);
    depth.set({ controller: c, name: c }, 0);
    adds.inc({ controller: c, name: c }, 0);
    retries.inc({ controller: c, name: c }, 0);
  }
  const q = (controller: ControllerName) => ({ controller, name: controller });
  return {
    registry,
    ...registerPoolMetrics(registry),
    reconciled(controller, outcome, seconds) {
      total.inc({ controller, result: outcome });
      time.observe({ controller }, seconds);
    },
    reconcileError(controller, kind, how) {
      errors.inc({ controller });
      if (how.terminal) terminal.inc({ controller });
      if (how.panic) panics.inc({ controller });
      errorsByKind.inc({ controller, error_kind: kind });
    },
    queueDepth: (controller, n) => depth.set(q(controller), n),
    queueAdd: (controller) => adds.inc(q(controller)),
    queueRetry: (controller) => retries.inc(q(controller)),
    queueWait: (controller, seconds) => queueDuration.observe(q(controller), seconds),
    queueWork: (controller, seconds) => workDuration.observe(q(controller), seconds),
    watchQueue: (controller, inFlight, nowMs) => void watched.set(controller, { inFlight, nowMs }),
    maxWorkers: (controller, n) => maxConcurrent.set({ controller }, n),
    activeWorkers: (controller, delta) => workers.inc({ controller }, delta),
    write: (verb, kind) => writes.inc({ verb, kind }),
    leader: (isLeader) => master.set({ name: leaseName }, isLeader ? 1 : 0),
    networkProbe: (result) => probes.inc({ result }),
    networkEnforcement(state) {
      for (const s of ENFORCEMENT_STATES) enforcement.set({ state: s }, s === state ? 1 : 0);
    },
  };
}
