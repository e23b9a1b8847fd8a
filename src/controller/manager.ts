// The generic part of every controller: one informer per kind the declarations name, one queue and one set of
// workers per controller, every informer event routed through the declarations' key maps, the writer, the Event
// recorder and an orderly stop. It knows no kind: what each controller is for, owns and watches is declared beside
// it (run/, agent/, policy/, approval/; controllers.ts lists them).
import { CLUSTER_POLICY_NAME, FIELD_MANAGER, LABEL } from "../api/constants.ts";
import { formatApiTime } from "../api/time.ts";
import type { KubeClient } from "../kube/client.ts";
import { createEventRecorder, type EventSink } from "../kube/event-recorder.ts";
import { createInformer, type Informer } from "../kube/informer.ts";
import type { KubeObject } from "../kube/objects.ts";
import { RESOURCES, type ResourceName } from "../kube/resources.ts";
import { componentLogger, type Logger } from "../log/logger.ts";
import type { ControllerMetrics, ControllerName } from "../metrics/controller-metrics.ts";
import type { PodSettings } from "../sandbox/pod-settings.ts";
import { DEFAULT_APPROVAL_TTL_MS } from "./approval/approval-decision.ts";
import { buildCacheTransforms } from "./cached-fields.ts";
import { createStringPool } from "./cached-strings.ts";
import type { ClusterCache } from "./cluster-port.ts";
import { createClusterWriter } from "./cluster-writer.ts";
import { startControllerLoop, type ControllerLoop } from "./controller-loop.ts";
import type { ControllerContext, ControllerDeclaration, KeyMap, Signal } from "./controller-declaration.ts";
import { buildObjectKey } from "./object-key.ts";
import { createNetworkVerifier } from "./leviath-policy/network-verification.ts";
import { computePolicyState, type GoodPolicy, type PolicyState } from "./leviath-policy/policy-state.ts";
import { createPoolLedger } from "./pool/pool-ledger.ts";
import type { ApprovalNotifier } from "./approval/approval-webhook.ts";
import { createWorkQueue, type WorkQueue } from "./work-queue.ts";

/** Everything the manager is built from; the clock, ids and leadership come in from the composition root. */
export interface ManagerOptions {
  /** The controllers to run (controllers.ts). */
  controllers: readonly ControllerDeclaration[];
  client: KubeClient;
  settings: PodSettings;
  workers: number;
  log: Logger;
  metrics: ControllerMetrics;
  nowMs: () => number;
  monotonicMs: () => number;
  newId: () => string;
  /** Whether writes are allowed right now (the lease is held); always true without leader election. */
  isLeader: () => boolean;
  /** How long consumed, orphaned, stale and invalid Approvals are kept (default one hour). */
  approvalTtlMs?: number;
  /** `reportingInstance` of the Events this process records (its pod name). */
  eventInstance?: string;
  /** Warm pools on: Runs adopt pool pods, and what the pools served is counted (the pool controller is in `controllers`). */
  warmPools?: boolean;
  /** How long a pool pod's identity or claim may be without its pod before the pool collects it (default one minute). */
  poolLeftoverGraceMs?: number;
  /** The approval webhook of pending prompts (absent: none). */
  approvalNotifier?: ApprovalNotifier | undefined;
}

/** The running controllers: caches, queues and (once leading) workers. */
export interface Manager {
  /** Start the informers; resolves once every cache has synced. */
  startCaches(): Promise<void>;
  /** True once every cache holds its first list. */
  synced(): boolean;
  /** Start reconciling (call once this process leads). */
  startWorkers(): void;
  stop(): Promise<void>;
  readonly cache: ClusterCache;
}

/** Where an event of one kind goes: a controller's queue, through its key map. */
interface Route {
  queue: WorkQueue;
  keys: KeyMap;
}

/** The kinds the declarations own, in order, each once: cached by the managed-by label, listed by owner. */
function ownedKinds(controllers: readonly ControllerDeclaration[]): ResourceName[] {
  return [...new Set(controllers.flatMap((c) => c.owns ?? []))];
}

/** An owned child's event enqueues the object its controller owner reference names, when that is of `owner`'s kind. */
function ownerKeys(owner: ResourceName): KeyMap {
  const kind = RESOURCES[owner].kind;
  return (child) => {
    const ref = child.metadata.ownerReferences?.find((r) => r.controller && r.kind === kind);
    return ref && child.metadata.namespace ? [buildObjectKey(child.metadata.namespace, ref.name)] : [];
  };
}

function enqueue(queue: WorkQueue, keys: Iterable<string>): void {
  for (const key of keys) queue.add(key);
}

/** A signal (a change outside any object, such as network enforcement) enqueues the keys each controller maps it to. */
function enqueueSignal(controllers: readonly ControllerDeclaration[], queues: ReadonlyMap<ControllerName, WorkQueue>, cache: ClusterCache, s: Signal): void {
  for (const c of controllers) {
    const keys = c.signals?.[s];
    if (keys) enqueue(queues.get(c.name)!, keys(cache));
  }
}

/** The informers, one per kind, each created on first use; `informerOf` a kind no controller declared is a bug. */
function createInformerSet(opts: ManagerOptions, log: Logger, owned: readonly ResourceName[]) {
  const onError = (res: { plural: string }, err: unknown, retryInMs: number) => log.warn({ err, resource: res.plural, retryInMs }, "watch failed; restarting");
  // Each cache keeps only what the reconcilers read of its kind (cached-fields.ts), with one copy of each short
  // string for all of them (cached-strings.ts).
  const transforms = buildCacheTransforms();
  const shared = createStringPool();
  const informers = new Map<ResourceName, Informer>();
  const addInformer = (name: ResourceName): void => {
    if (informers.has(name)) return;
    const trim = transforms[name];
    const transform = trim ? (o: KubeObject) => shared(trim(o)) : shared;
    // Children are cached only when the operator made them.
    const selector = owned.includes(name) ? { labelSelector: `${LABEL.managedBy}=${FIELD_MANAGER}` } : {};
    informers.set(name, createInformer(opts.client, RESOURCES[name], { ...selector, onError, transform }));
  };
  const informerOf = (name: ResourceName): Informer => {
    const informer = informers.get(name);
    if (!informer) throw new Error(`no controller declares ${name}: add it to the owns or watches of the controller that reads it`);
    return informer;
  };
  return { informers, addInformer, informerOf };
}

/** One controller's queue, its depth, adds, waits, work and stuck keys measured. */
function createMeasuredQueue(opts: ManagerOptions, name: ControllerName): WorkQueue {
  const queue = createWorkQueue(undefined, (depth, added) => {
    opts.metrics.queueDepth(name, depth);
    if (added) opts.metrics.queueAdd(name);
  }, { nowMs: opts.monotonicMs, waited: (s) => opts.metrics.queueWait(name, s), worked: (s) => opts.metrics.queueWork(name, s) });
  opts.metrics.watchQueue(name, () => queue.inFlightStartedMs(), opts.monotonicMs);
  opts.metrics.maxWorkers(name, opts.workers);
  return queue;
}

/** The cluster policy's state from the cache, remembering the last valid one (what an invalid edit falls back to). */
function createPolicyStateReader(cache: ClusterCache): () => PolicyState {
  let lastGood: GoodPolicy | undefined;
  return () => {
    const state = computePolicyState(cache.get("policy", undefined, CLUSTER_POLICY_NAME) as Parameters<typeof computePolicyState>[0], lastGood);
    if (state.kind === "valid") lastGood = { spec: state.spec, generation: state.generation };
    return state;
  };
}

/** Build the declared controllers over one set of informers. */
export function createManager(opts: ManagerOptions): Manager {
  const log = componentLogger(opts.log, "controller");
  const owned = ownedKinds(opts.controllers);
  const { informers, addInformer, informerOf } = createInformerSet(opts, log, owned);
  const routes = new Map<ResourceName, Route[]>();
  const route = (kind: ResourceName, r: Route) => {
    addInformer(kind);
    routes.set(kind, [...(routes.get(kind) ?? []), r]);
  };

  const cache: ClusterCache = {
    get: (res, ns, name) => informerOf(res).get(ns, name),
    list: (res, ns) => informerOf(res).list(ns),
    listOwnedBy: (uid) => owned.flatMap((k) => informerOf(k).listOwnedBy(uid)),
  };

  const queues = new Map<ControllerName, WorkQueue>();
  for (const c of opts.controllers) {
    const queue = createMeasuredQueue(opts, c.name);
    queues.set(c.name, queue);
    route(c.for.kind, { queue, keys: c.for.keys });
    for (const kind of c.owns ?? []) route(kind, { queue, keys: ownerKeys(c.for.kind) });
    for (const w of c.watches ?? []) route(w.kind, { queue, keys: w.keys });
  }
  for (const [kind, kindRoutes] of routes) {
    informerOf(kind).on((_e, obj) => {
      for (const r of kindRoutes) enqueue(r.queue, r.keys(obj, cache));
    });
  }
  const signal = (s: Signal) => enqueueSignal(opts.controllers, queues, cache, s);

  const policyState = createPolicyStateReader(cache);
  const writer = createClusterWriter({ client: opts.client, metrics: opts.metrics, isLeader: opts.isLeader });
  const recorder = createEventRecorder(opts.client, {
    controller: FIELD_MANAGER, instance: opts.eventInstance ?? FIELD_MANAGER, nowMs: opts.nowMs,
    onError: (err, event) => log.warn({ err, reason: event.reason }, "recording an event failed"),
  });
  // Only the leader speaks for the controller; a standby's view may be stale.
  const events: EventSink = { record: (regarding, event) => { if (opts.isLeader()) recorder.record(regarding, event); } };

  const verifier = createNetworkVerifier({
    writer, policy: policyState, settings: opts.settings, nowMs: opts.nowMs, newId: opts.newId, log: opts.log, metrics: opts.metrics,
    onChange: () => signal("networkEnforcement"),
  });
  const ctx: ControllerContext = {
    cache, writer, policy: policyState, networkEnforcement: () => verifier.state(), events, settings: opts.settings,
    nowMs: opts.nowMs, nowIso: () => formatApiTime(opts.nowMs()), approvalTtlMs: opts.approvalTtlMs ?? DEFAULT_APPROVAL_TTL_MS,
    ...(opts.warmPools ? { pools: createPoolLedger(opts.metrics, opts.nowMs) } : {}),
    ...(opts.poolLeftoverGraceMs !== undefined ? { poolLeftoverGraceMs: opts.poolLeftoverGraceMs } : {}),
    ...(opts.approvalNotifier === undefined ? {} : { approvalNotifier: opts.approvalNotifier }),
  };
  const reconcilers = new Map(opts.controllers.map((c) => [c.name, c.reconciler(ctx)]));
  let loops: ControllerLoop[] = [];

  return {
    cache,
    async startCaches() {
      await Promise.all([...informers.values()].map((i) => i.start()));
      while (![...informers.values()].every((i) => i.synced)) await new Promise((r) => setTimeout(r, 100));
      log.info({ informers: informers.size }, "caches synced");
    },
    synced: () => [...informers.values()].every((i) => i.synced),
    startWorkers() {
      if (loops.length) return;
      // Everything cached is reconciled once at start: level-triggered, nothing depends on having seen an event.
      for (const c of opts.controllers) {
        const keys = c.startKeys ? c.startKeys(cache) : cache.list(c.for.kind).flatMap((o) => [...c.for.keys(o, cache)]);
        enqueue(queues.get(c.name)!, keys);
      }
      loops = opts.controllers.map((c) => startControllerLoop({
        name: c.name, queue: queues.get(c.name)!, reconcile: reconcilers.get(c.name)!, workers: c.workers ?? opts.workers,
        metrics: opts.metrics, log: opts.log, newId: opts.newId, monotonicMs: opts.monotonicMs,
      }));
      verifier.start();
      log.info({ workers: opts.workers, controllers: opts.controllers.map((c) => ({ name: c.name, purpose: c.purpose })) }, "workers started");
    },
    async stop() {
      await verifier.stop();
      await Promise.all(loops.map((l) => l.stop()));
      await recorder.stop();
      for (const queue of queues.values()) queue.shutDown();
      await Promise.all([...informers.values()].map((i) => i.stop()));
    },
  };
}
