import { CLUSTER_POLICY_NAME, FIELD_MANAGER, KIND, LABEL } from "../api/constants.ts";
import { TERMINAL_PHASES, type RunStatus } from "../api/status.ts";
import { formatApiTime } from "../api/time.ts";
import type { KubeClient } from "../kube/client.ts";
import { createEventRecorder, type EventSink } from "../kube/event-recorder.ts";
import { createInformer, type Informer } from "../kube/informer.ts";
import { applyObject, applyStatus, createObject, deleteObject, getObject, getObjectMetadata, replaceObject, type KubeObject } from "../kube/objects.ts";
import { RESOURCES, resourceOf, type ResourceName } from "../kube/resources.ts";
import { componentLogger, type Logger } from "../log/logger.ts";
import type { ControllerMetrics, ControllerName } from "../metrics/controller-metrics.ts";
import { COMPONENT } from "../sandbox/names.ts";
import type { PodSettings } from "../sandbox/pod-settings.ts";
import { createAgentReconciler, createPolicyReconciler } from "./agent/agent-reconciler.ts";
import { DEFAULT_APPROVAL_TTL_MS } from "./approval/approval-decision.ts";
import { buildCacheTransforms } from "./cached-fields.ts";
import { createStringPool } from "./cached-strings.ts";
import { approvalRunName, createApprovalReconciler } from "./approval/approval-reconciler.ts";
import type { ClusterCache, ClusterWriter } from "./cluster-port.ts";
import { NotLeaderError, startControllerLoop, type ControllerLoop } from "./controller-loop.ts";
import { computePolicyState, type GoodPolicy, type PolicyState } from "./policy/policy-state.ts";
import { createRunReconciler } from "./run/run-reconciler.ts";
import { createNetworkVerifier } from "./policy/network-verification.ts";
import { buildObjectKey, buildObjectKeyOf } from "./object-key.ts";
import { createWorkQueue, type WorkQueue } from "./work-queue.ts";

/** Everything the manager is built from; the clock, ids and leadership come in from the composition root. */
export interface ManagerOptions {
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

const CHILD_KINDS = ["pod", "configMap", "serviceAccount", "role", "roleBinding", "networkPolicy", "pvc"] as const satisfies readonly ResourceName[];

type Obj = KubeObject & { spec?: { agentRef?: { name?: string } }; status?: RunStatus };

const keyOf = buildObjectKeyOf;

/** Build the Agent, Run and policy controllers over one set of informers. */
export function createManager(opts: ManagerOptions): Manager {
  const log = componentLogger(opts.log, "controller");
  const onError = (res: { plural: string }, err: unknown, retryInMs: number) => log.warn({ err, resource: res.plural, retryInMs }, "watch failed; restarting");
  const informers = new Map<ResourceName, Informer>();
  // Each cache keeps only what the reconcilers read of its kind (cached-fields.ts), with one copy of each short
  // string for all of them (cached-strings.ts).
  const transforms = buildCacheTransforms();
  const shared = createStringPool();
  const cached = (name: ResourceName) => {
    const trim = transforms[name];
    return { onError, transform: trim ? (o: KubeObject) => shared(trim(o)) : shared };
  };
  for (const name of ["agent", "run", "policy", "runtimeClass", "approval", "namespace"] as const) informers.set(name, createInformer(opts.client, RESOURCES[name], cached(name)));
  for (const name of CHILD_KINDS) {
    informers.set(name, createInformer(opts.client, RESOURCES[name], { labelSelector: `${LABEL.managedBy}=${FIELD_MANAGER}`, ...cached(name) }));
  }
  const inf = (name: ResourceName) => informers.get(name)!;

  const cache: ClusterCache = {
    get: (res, ns, name) => inf(res).get(ns, name),
    list: (res, ns) => inf(res).list(ns),
    listOwnedBy: (uid) => CHILD_KINDS.flatMap((k) => inf(k).listOwnedBy(uid)),
  };

  let lastGood: GoodPolicy | undefined;
  const policyState = (): PolicyState => {
    const state = computePolicyState(inf("policy").get(undefined, CLUSTER_POLICY_NAME) as Obj | undefined, lastGood);
    if (state.kind === "valid") lastGood = { spec: state.spec, generation: state.generation };
    return state;
  };

  const guard = () => {
    if (!opts.isLeader()) throw new NotLeaderError("not the leader");
  };
  /** Create `obj`; when its name is taken, read what holds it (counted as a create either way). */
  const createOrRead = async (obj: KubeObject): Promise<{ created: true; object: KubeObject } | { created: false; existing: KubeObject }> => {
    opts.metrics.write("create", obj.kind);
    const created = await createObject(opts.client, obj);
    if (created) return { created: true, object: created };
    const existing = await getObject(opts.client, resourceOf(obj.apiVersion, obj.kind)!, obj.metadata.namespace, obj.metadata.name);
    if (!existing) throw new Error(`${obj.kind} ${keyOf(obj)} exists and then does not: retry`);
    return { created: false, existing };
  };
  const writer: ClusterWriter = {
    async apply(obj) {
      guard();
      opts.metrics.write("apply", obj.kind);
      await applyObject(opts.client, obj);
    },
    async applyStatus(res, ns, name, status) {
      guard();
      opts.metrics.write("apply_status", RESOURCES[res].kind);
      await applyStatus(opts.client, RESOURCES[res], ns, name, status);
    },
    async create(obj) {
      guard();
      opts.metrics.write("create", obj.kind);
      if (await createObject(opts.client, obj)) return;
      opts.metrics.write("apply", obj.kind);
      await applyObject(opts.client, obj);
    },
    read: (res, ns, name) => getObject(opts.client, RESOURCES[res], ns, name),
    readMetadata: (res, ns, name) => getObjectMetadata(opts.client, RESOURCES[res], ns, name),
    async replace(obj, resourceVersion) {
      guard();
      let version = resourceVersion;
      if (version === undefined) {
        const found = await createOrRead(obj);
        if (found.created) return;
        version = found.existing.metadata.resourceVersion;
        if (version === undefined) throw new Error(`${obj.kind} ${keyOf(obj)} was read without a resourceVersion: retry`);
      }
      opts.metrics.write("replace", obj.kind);
      await replaceObject(opts.client, obj, version);
    },
    async createOrGet(obj) {
      guard();
      const found = await createOrRead(obj);
      return found.created ? found.object : found.existing;
    },
    async delete(obj) {
      guard();
      opts.metrics.write("delete", obj.kind);
      await deleteObject(opts.client, resourceOf(obj.apiVersion, obj.kind)!, obj.metadata.namespace, obj.metadata.name, obj.metadata.uid);
    },
  };

  const recorder = createEventRecorder(opts.client, {
    controller: FIELD_MANAGER, instance: opts.eventInstance ?? FIELD_MANAGER, nowMs: opts.nowMs,
    onError: (err, event) => log.warn({ err, reason: event.reason }, "recording an event failed"),
  });
  // Only the leader speaks for the controller; a standby's view may be stale.
  const events: EventSink = { record: (regarding, event) => { if (opts.isLeader()) recorder.record(regarding, event); } };

  const queues = new Map<ControllerName, WorkQueue>();
  for (const name of ["agent", "run", "policy", "approval"] as const) {
    const queue = createWorkQueue(undefined, (depth, added) => {
      opts.metrics.queueDepth(name, depth);
      if (added) opts.metrics.queueAdd(name);
    }, { nowMs: opts.monotonicMs, waited: (s) => opts.metrics.queueWait(name, s), worked: (s) => opts.metrics.queueWork(name, s) });
    opts.metrics.watchQueue(name, () => queue.inFlightStartedMs(), opts.monotonicMs);
    opts.metrics.maxWorkers(name, opts.workers);
    queues.set(name, queue);
  }
  const q = (name: ControllerName) => queues.get(name)!;
  const unpinnedRuns = (ns?: string) => inf("run").list(ns).filter((r) => !(r as Obj).status?.agent);
  const liveRuns = (ns?: string) => inf("run").list(ns).filter((r) => !TERMINAL_PHASES.includes((r as Obj).status?.phase ?? "Pending"));

  inf("agent").on((_e, agent) => {
    q("agent").add(keyOf(agent));
    for (const run of unpinnedRuns(agent.metadata.namespace)) if ((run as Obj).spec?.agentRef?.name === agent.metadata.name) q("run").add(keyOf(run));
  });
  const approvalsOf = (namespace: string | undefined, run: string) => inf("approval").list(namespace).filter((a) => approvalRunName(a) === run);
  inf("run").on((_e, run) => {
    q("run").add(keyOf(run));
    // An Approval's binding and match follow its Run (created, re-created, a prompt raised or answered).
    for (const a of approvalsOf(run.metadata.namespace, run.metadata.name)) q("approval").add(keyOf(a));
  });
  inf("approval").on((_e, approval) => q("approval").add(keyOf(approval)));
  inf("policy").on(() => {
    q("policy").add(CLUSTER_POLICY_NAME);
    for (const agent of inf("agent").list()) q("agent").add(keyOf(agent));
    for (const run of unpinnedRuns()) q("run").add(keyOf(run));
  });
  inf("runtimeClass").on(() => {
    for (const run of liveRuns()) q("run").add(keyOf(run));
  });
  // A namespace's Pod Security labels are part of its Runs' status (PodSecurityEnforced).
  inf("namespace").on((_e, ns) => {
    for (const run of liveRuns(ns.metadata.name)) q("run").add(keyOf(run));
  });
  for (const kind of CHILD_KINDS) {
    inf(kind).on((_e, child) => {
      const owner = child.metadata.ownerReferences?.find((r) => r.controller && r.kind === KIND.run);
      if (owner && child.metadata.namespace) q("run").add(buildObjectKey(child.metadata.namespace, owner.name));
      // A relay (or its reader Role) someone else edited or deleted is written again by its Approvals' pass.
      const relayOf = child.metadata.labels?.[LABEL.component] === COMPONENT.approvals ? child.metadata.ownerReferences?.find((r) => r.kind === KIND.run) : undefined;
      if (relayOf && child.metadata.namespace) for (const a of approvalsOf(child.metadata.namespace, relayOf.name)) q("approval").add(keyOf(a));
    });
  }

  const verifier = createNetworkVerifier({
    writer, policy: policyState, settings: opts.settings, nowMs: opts.nowMs, newId: opts.newId, log: opts.log, metrics: opts.metrics,
    onChange: () => {
      q("policy").add(CLUSTER_POLICY_NAME);
      for (const run of liveRuns()) q("run").add(keyOf(run));
    },
  });
  const deps = { cache, writer, policy: policyState, networkEnforcement: () => verifier.state(), events };
  const nowIso = () => formatApiTime(opts.nowMs());
  const reconcilers = {
    agent: createAgentReconciler({ ...deps, nowIso, defaultRuntimeImage: opts.settings.defaultRuntimeImage }),
    policy: createPolicyReconciler({ ...deps, nowIso }),
    run: createRunReconciler({ ...deps, settings: opts.settings, nowMs: opts.nowMs }),
    approval: createApprovalReconciler({ ...deps, nowMs: opts.nowMs, ttlMs: opts.approvalTtlMs ?? DEFAULT_APPROVAL_TTL_MS }),
  };
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
      q("policy").add(CLUSTER_POLICY_NAME);
      for (const agent of inf("agent").list()) q("agent").add(keyOf(agent));
      for (const run of inf("run").list()) q("run").add(keyOf(run));
      for (const approval of inf("approval").list()) q("approval").add(keyOf(approval));
      loops = (["agent", "run", "policy", "approval"] as const).map((name) => startControllerLoop({
        name, queue: q(name), reconcile: reconcilers[name], workers: name === "policy" ? 1 : opts.workers,
        metrics: opts.metrics, log: opts.log, newId: opts.newId, monotonicMs: opts.monotonicMs,
      }));
      verifier.start();
      log.info({ workers: opts.workers }, "workers started");
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
