// What a controller is, as data the manager builds from (controller-runtime's builder: For, Owns, Watches): the kind
// it reconciles, the children it owns, the other kinds whose events bring its keys back, and its reconcile function.
// The manager knows no kind: it makes one informer per kind any declaration names, one queue per controller, and
// routes every event through the declarations' key maps.
import type { NetworkEnforcementStatus } from "../api/status.ts";
import type { EventSink } from "../kube/event-recorder.ts";
import type { KubeObject } from "../kube/objects.ts";
import type { ResourceName } from "../kube/resources.ts";
import type { ControllerName } from "../metrics/controller-metrics.ts";
import type { PodSettings } from "../sandbox/pod-settings.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "./cluster-port.ts";
import type { PolicyState } from "./leviath-policy/policy-state.ts";
import type { ApprovalNotifier } from "./approval/approval-webhook.ts";
import type { PoolLedger } from "./pool/pool-ledger.ts";

/** What every reconciler may be built from; the manager makes one for all of them. */
export interface ControllerContext {
  cache: ClusterCache;
  writer: ClusterWriter;
  /** The LeviathPolicy in force (the last valid generation when the current one is invalid). */
  policy: () => PolicyState;
  /** The NetworkPolicy probe's last finding. */
  networkEnforcement: () => NetworkEnforcementStatus;
  /** Where Events go (recorded by the leader only). */
  events: EventSink;
  settings: PodSettings;
  nowMs: () => number;
  /** The time now as the API writes it (RFC 3339, seconds). */
  nowIso: () => string;
  /** How long consumed, orphaned, stale and invalid Approvals are kept. */
  approvalTtlMs: number;
  /** What the warm pools served; present only with warm pools on (Runs adopt pool pods only then). */
  pools?: PoolLedger | undefined;
  /** How long a pool pod's identity or claim may be without its pod before the pool collects it (undefined: the default). */
  poolLeftoverGraceMs?: number | undefined;
  /** Where a Run's pending prompts are notified besides its Event (the approval webhook; absent: nowhere). */
  approvalNotifier?: ApprovalNotifier | undefined;
}

/** Reconcile one key: level-triggered, idempotent; a thrown error is classified and retried by the loop. */
export type Reconcile = (key: string) => Promise<ReconcileResult>;

/** The keys of a controller an event of some object brings back (read the rest from the cache). */
export type KeyMap = (obj: KubeObject, cache: ClusterCache) => Iterable<string>;

/** A kind whose events bring keys of the controller back. */
export interface Watch {
  kind: ResourceName;
  keys: KeyMap;
}

/** Changes that come from no informer: the NetworkPolicy probe's finding. */
export type Signal = "networkEnforcement";

/** One controller, declared. */
export interface ControllerDeclaration {
  name: ControllerName;
  /** What it is for, in a sentence (logged at start). */
  purpose: string;
  /** The kind it reconciles, and the keys an event of it enqueues (usually its own key). */
  for: Watch;
  /**
   * Children it owns as their controller: cached only with the operator's managed-by label, listed by
   * `cache.listOwnedBy`, and an event of one enqueues the object named by its controller owner reference.
   */
  owns?: readonly ResourceName[];
  /** Other kinds whose events bring its keys back. */
  watches?: readonly Watch[];
  /** Keys to look at again when something outside the informers changes. */
  signals?: Partial<Record<Signal, (cache: ClusterCache) => Iterable<string>>>;
  /** Keys reconciled once at start (default: every cached object of its kind, through `for.keys`). */
  startKeys?: (cache: ClusterCache) => Iterable<string>;
  /** Workers of its own (default: the operator's `--workers`). */
  workers?: number;
  reconciler(ctx: ControllerContext): Reconcile;
}
