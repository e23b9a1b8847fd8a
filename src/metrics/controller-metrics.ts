import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { NetworkEnforcementStatus } from "../api/status.ts";
import type { ErrorKind } from "../kube/errors.ts";

/** The controllers, as a closed label set. */
export type ControllerName = "agent" | "run" | "policy" | "approval";
/** Reconcile outcomes, as controller-runtime labels them. */
export type ReconcileOutcome = "success" | "error" | "requeue_after";
/** Write verbs the controller makes, as a closed label set. */
export type WriteVerb = "apply" | "apply_status" | "create" | "delete";

/** The controller's Prometheus metrics, under controller-runtime's names where one exists. */
export interface ControllerMetrics {
  readonly registry: Registry;
  reconciled(controller: ControllerName, outcome: ReconcileOutcome, seconds: number): void;
  reconcileError(controller: ControllerName, kind: ErrorKind): void;
  queueDepth(controller: ControllerName, depth: number): void;
  queueAdd(controller: ControllerName): void;
  queueRetry(controller: ControllerName): void;
  activeWorkers(controller: ControllerName, delta: number): void;
  write(verb: WriteVerb, kind: string): void;
  leader(isLeader: boolean): void;
  /** One NetworkPolicy enforcement probe finished with this result. */
  networkProbe(result: NetworkEnforcementState): void;
  /** The operator's current view of NetworkPolicy enforcement (1 for the state it is in, 0 for the others). */
  networkEnforcement(state: NetworkEnforcementState): void;
}

/** What the NetworkPolicy probe concluded, as a closed label set (the status field's values). */
type NetworkEnforcementState = NetworkEnforcementStatus["state"];
const ENFORCEMENT_STATES: readonly NetworkEnforcementState[] = ["Verified", "NotEnforced", "Unknown"];

/** Create the registry and every metric (process metrics included). */
export function createControllerMetrics(leaseName = "leviath-operator"): ControllerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters fail `promtool check metrics`; the per-type gauge nodejs_active_resources stays.
  for (const misnamed of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) registry.removeSingleMetric(misnamed);
  const registers = [registry];
  const total = new Counter({ name: "controller_runtime_reconcile_total", help: "Total number of reconciliations per controller", labelNames: ["controller", "result"], registers });
  const errors = new Counter({ name: "controller_runtime_reconcile_errors_total", help: "Total number of reconciliation errors per controller", labelNames: ["controller"], registers });
  const errorsByKind = new Counter({ name: "leviath_reconcile_errors_total", help: "Reconciliation errors per controller and error kind (transient, invalid, forbidden, internal)", labelNames: ["controller", "kind"], registers });
  const time = new Histogram({
    name: "controller_runtime_reconcile_time_seconds", help: "Length of time per reconciliation per controller", labelNames: ["controller"], registers,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  });
  const depth = new Gauge({ name: "workqueue_depth", help: "Current depth of workqueue", labelNames: ["name"], registers });
  const adds = new Counter({ name: "workqueue_adds_total", help: "Total number of adds handled by workqueue", labelNames: ["name"], registers });
  const retries = new Counter({ name: "workqueue_retries_total", help: "Total number of retries handled by workqueue", labelNames: ["name"], registers });
  const workers = new Gauge({ name: "controller_runtime_active_workers", help: "Number of currently used workers per controller", labelNames: ["controller"], registers });
  const writes = new Counter({ name: "leviath_api_writes_total", help: "Writes the controller sent to the API server, by verb and kind", labelNames: ["verb", "kind"], registers });
  const master = new Gauge({ name: "leader_election_master_status", help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master", labelNames: ["name"], registers });
  master.set({ name: leaseName }, 0);
  const probes = new Counter({ name: "leviath_network_probes_total", help: "NetworkPolicy enforcement probes the controller ran, by result (Verified, NotEnforced, Unknown)", labelNames: ["result"], registers });
  const enforcement = new Gauge({ name: "leviath_network_enforcement", help: "The controller's view of NetworkPolicy enforcement on this cluster: 1 for the current state (Verified, NotEnforced, Unknown), 0 for the others", labelNames: ["state"], registers });
  for (const s of ENFORCEMENT_STATES) {
    probes.inc({ result: s }, 0);
    enforcement.set({ state: s }, s === "Unknown" ? 1 : 0);
  }
  for (const c of ["agent", "run", "policy", "approval"] as const) {
    for (const r of ["success", "error", "requeue_after"] as const) total.inc({ controller: c, result: r }, 0);
    errors.inc({ controller: c }, 0);
    depth.set({ name: c }, 0);
  }
  return {
    registry,
    reconciled(controller, outcome, seconds) {
      total.inc({ controller, result: outcome });
      time.observe({ controller }, seconds);
    },
    reconcileError(controller, kind) {
      errors.inc({ controller });
      errorsByKind.inc({ controller, kind });
    },
    queueDepth: (controller, n) => depth.set({ name: controller }, n),
    queueAdd: (controller) => adds.inc({ name: controller }),
    queueRetry: (controller) => retries.inc({ name: controller }),
    activeWorkers: (controller, delta) => workers.inc({ controller }, delta),
    write: (verb, kind) => writes.inc({ verb, kind }),
    leader: (isLeader) => master.set({ name: leaseName }, isLeader ? 1 : 0),
    networkProbe: (result) => probes.inc({ result }),
    networkEnforcement(state) {
      for (const s of ENFORCEMENT_STATES) enforcement.set({ state: s }, s === state ? 1 : 0);
    },
  };
}
