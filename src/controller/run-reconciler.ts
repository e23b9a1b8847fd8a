import { AgentSpecSchema, type AgentSpec } from "../api/agent.ts";
import { RunSpecSchema, type RunSpec } from "../api/run.ts";
import { API_VERSION, KIND } from "../api/constants.ts";
import { CONDITION, REASON, TERMINAL_PHASES, type NetworkEnforcementStatus, type RunStatus } from "../api/status.ts";
import { isApiStatus } from "../kube/errors.ts";
import type { EventSink, ObjectReference } from "../kube/event-recorder.ts";
import type { KubeObject } from "../kube/objects.ts";
import { ANNOTATION, buildChildNames, type RunRef } from "../sandbox/names.ts";
import type { PodSettings } from "../sandbox/pod-settings.ts";
import { buildRunChildren } from "../sandbox/run-children.ts";
import { buildPolicyConfigMap } from "../sandbox/run-objects.ts";
import { checkBlueprintFiles, type BlueprintFilesSource } from "../sandbox/blueprint-files.ts";
import { buildRunSnapshot, parseSnapshotData, type RunSnapshot } from "../sandbox/run-snapshot.ts";
import { checkStartSnapshot, computeSnapshotDataSha256 } from "./start-snapshot.ts";
import { computeSandboxPlan, hasHostStages } from "../sandbox/sandbox-plan.ts";
import { CLUSTER_ADVICE } from "../api/findings.ts";
import { computeAgentFindings } from "../policy/agent-findings.ts";
import { decideImageCeiling, decideRunCeilings } from "../policy/ceilings.ts";
import { VALIDATION_CONTEXT } from "../policy/read-paths/index.ts";
import { isApplied } from "./applied.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "./cluster-port.ts";
import { formatFieldPath, isSameStatus } from "./conditions.ts";
import { decideNetworkRefusal, ENFORCEMENT_UNCHECKED } from "./network-condition.ts";
import { computeEffectivePolicy, type PolicyState } from "./policy-state.ts";
import { computeTtlExpiryMs, type ObservedPod } from "./run-completion.ts";
import { decidePodSecurityCondition } from "./pod-security-condition.ts";
import { checkCredentials } from "./run-credentials.ts";
import { checkMcpSecrets } from "./mcp-secrets.ts";
import { decideRun } from "./run-decision.ts";
import { resolveResume } from "./run-resume.ts";
import { createTransitionRecorder } from "./status-events.ts";
import { buildBlockedRunStatus, buildRunStatus, overlayControllerFields, pickControllerFields } from "./run-status.ts";
import { buildAgentKey } from "../api/common.ts";

/** What the Run reconciler needs. */
export interface RunReconcilerDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  policy: () => PolicyState;
  settings: PodSettings;
  nowMs: () => number;
  /** The NetworkPolicy probe's last finding (NetworkIsolated, and `onUnverified: refuse`). */
  networkEnforcement?: () => NetworkEnforcementStatus;
  /** Where the Events of status transitions go (none: not recorded). */
  events?: EventSink;
}

type RunObject = KubeObject & { spec?: unknown; status?: RunStatus; metadata: { uid?: string; generation?: number; deletionTimestamp?: unknown } };
type Terminated = { exitCode?: number; reason?: string; message?: string };
type PodObject = KubeObject & {
  status?: {
    phase?: string; reason?: string; message?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; state?: { terminated?: Terminated } }[];
  };
  metadata: { uid?: string; deletionTimestamp?: unknown; annotations?: Record<string, string> };
};

/** Why a Run has no snapshot yet: it waits (Pending) or can never start (Failed). */
/** A Run that may not go on; `sha256`: the digest of the start snapshot this pass accepted before it was stopped. */
type Blocked = { blocked: true; phase: "Pending" | "Failed"; reason: string; message: string; recheckMs?: number; sha256?: string };

const TERMINATING_RECHECK_MS = 1000;
/** A Run refused for unverified enforcement looks again this often (a probe result also requeues it). */
const NETWORK_REFUSAL_RECHECK_MS = 60_000;
/** A Run waiting on its Agent's blueprint-files ConfigMap looks again this often (the controller does not watch it). */
const BLUEPRINT_FILES_RECHECK_MS = 5_000;
/** What a stopped run loses; its ConfigMap and workspace claim stay until the Run is deleted. */
const STOPPED_KINDS = new Set(["Pod", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"]);
/** What a pod is written after: admission needs its ServiceAccount, and it must never run unisolated. */
const POD_PREREQUISITES = new Set(["ServiceAccount", "NetworkPolicy"]);

/** The `action` of the Events of a Run's status transitions. */
const RUN_ACTION = "Reconcile";

const referenceOf = (ref: RunRef): ObjectReference => ({ apiVersion: API_VERSION, kind: KIND.run, name: ref.name, namespace: ref.namespace, uid: ref.uid });

/** The engine pod's runtime container, whose exit decides the Run's phase. */
const AGENT_CONTAINER = "agent";

function observePod(pod: PodObject): ObservedPod {
  const s = pod.status;
  const ready = s?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
  const t = s?.containerStatuses?.find((c) => c.name === AGENT_CONTAINER)?.state?.terminated;
  return {
    ...(s?.phase ? { phase: s.phase } : {}),
    ready,
    ...(t?.exitCode !== undefined ? { agent: { exitCode: t.exitCode, ...(t.reason ? { reason: t.reason } : {}), ...(t.message ? { message: t.message } : {}) } } : {}),
    ...(s?.reason ? { reason: s.reason } : {}),
    ...(s?.message ? { message: s.message } : {}),
  };
}

function isOwnedBy(obj: KubeObject | undefined, uid: string): boolean {
  return obj?.metadata.ownerReferences?.some((r) => r.controller && r.uid === uid) ?? false;
}

/** Waits for every write, so none is still in flight when the pass ends, then throws the first failure. */
async function settleAll<T>(writes: Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(writes);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** Reconcile one Run: pin its policy once, build its children, write them, prune the rest, report status. */
export function createRunReconciler(deps: RunReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const { cache, writer } = deps;
  const recordTransitions = createTransitionRecorder(deps.events);
  // The status this controller last wrote for each Run, with the resourceVersion of the Run it was computed from.
  // A pass whose cached Run is still at that version has not seen the write: its previous status is the written
  // one. A stale previous would undo a one-time transition (NetworkPolicyRestored, a restore time) and the
  // same-status check would then skip the correction for good. An entry goes once the cache has moved past it.
  const written = new Map<string, { fromRv: string | undefined; status: RunStatus }>();

  /** The run's snapshot: read from its ConfigMap, or resolved now and written once (create, never update). */
  async function snapshotFor(ref: RunRef, spec: RunSpec, status: RunStatus | undefined): Promise<RunSnapshot | Blocked> {
    const name = buildChildNames(ref.name).configMap;
    type ConfigMapObject = KubeObject & { data?: Record<string, string> };
    let cm = cache.get("configMap", ref.namespace, name) as ConfigMapObject | undefined;
    let resolved: Record<string, string> | undefined;
    // A digest on record is a snapshot this controller wrote and accepted on an earlier pass, even one that then
    // stopped short of pods (a network refusal, credentials beside host stages): it is checked by digest from then
    // on, never against a fresh resolution (the policy may have changed since, as it may for any pinned Run).
    const pinnedBefore = status?.agent !== undefined || status?.snapshotSha256 !== undefined || (status?.phase !== undefined && TERMINAL_PHASES.includes(status.phase));
    if (!cm || !pinnedBefore) {
      if (pinnedBefore) {
        // Pinned before, or over: never resolve again. The cache may only lag, so read the ConfigMap live.
        cm = await writer.read("configMap", ref.namespace, name) as ConfigMapObject | undefined;
      } else {
        // Not pinned yet: whatever holds the name must be exactly what this pass resolves (start-snapshot.ts).
        const fresh = await resolveSnapshot(ref, spec);
        if ("blocked" in fresh) return fresh;
        // Pinned with the rest: which MCP Secrets reach the sidecar is decided once, so the engine pod never changes.
        fresh.controller.mcpSecrets = await checkMcpSecrets(writer, ref.namespace, fresh.runPolicy.mcpServers);
        const desired = buildPolicyConfigMap(ref, fresh);
        resolved = (desired as ConfigMapObject).data;
        cm = (cm ?? await writer.createOrGet(desired)) as ConfigMapObject | undefined;
      }
    }
    if (!cm) {
      return { blocked: true, phase: "Failed", reason: REASON.snapshotInvalid, message: `ConfigMap '${name}' holding the pinned run policy is gone; a started Run is never resolved again` };
    }
    if (!isOwnedBy(cm, ref.uid)) {
      return { blocked: true, phase: "Failed", reason: REASON.snapshotInvalid, message: `ConfigMap '${name}' exists and is not owned by this Run` };
    }
    const mismatch = checkStartSnapshot(name, cm.data, {
      ...(resolved ? { resolved } : {}), ...(status?.snapshotSha256 ? { sha256: status.snapshotSha256 } : {}), neverPinned: status?.agent === undefined && status?.snapshotSha256 === undefined,
    });
    if (mismatch !== undefined) return { blocked: true, phase: "Failed", reason: REASON.snapshotInvalid, message: mismatch };
    const parsed = parseSnapshotData(cm.data);
    return parsed.ok ? { ...parsed.value, sha256: computeSnapshotDataSha256(cm.data!) } : { blocked: true, phase: "Failed", reason: REASON.snapshotInvalid, message: `ConfigMap '${name}': ${parsed.message}` };
  }

  /** The Agent's blueprint files, read live (only Run children are cached) and checked (blueprint-files.ts). */
  async function readBlueprintFiles(namespace: string, agent: string, spec: AgentSpec): Promise<{ files?: Record<string, string> } | Blocked> {
    const configMap = spec.blueprintFiles?.configMap;
    if (configMap === undefined) return {};
    const source = await writer.read("configMap", namespace, configMap) as (KubeObject & BlueprintFilesSource) | undefined;
    const checked = checkBlueprintFiles(agent, configMap, source);
    if (checked.ok) return { files: checked.files };
    return { blocked: true, phase: "Pending", reason: source ? REASON.blueprintFilesInvalid : REASON.blueprintFilesNotFound, message: checked.message, recheckMs: BLUEPRINT_FILES_RECHECK_MS };
  }

  async function resolveSnapshot(ref: RunRef, spec: RunSpec): Promise<RunSnapshot | Blocked> {
    const agentObj = cache.get("agent", ref.namespace, spec.agentRef.name) as (KubeObject & { spec?: unknown; metadata: { generation?: number } }) | undefined;
    if (!agentObj) return { blocked: true, phase: "Pending", reason: REASON.agentNotFound, message: `Agent '${spec.agentRef.name}' not found in namespace '${ref.namespace}'` };
    const written = structuredClone((agentObj.spec ?? {}) as Record<string, unknown>);
    const agentSpec = AgentSpecSchema.safeParse(written);
    if (!agentSpec.success) {
      const issue = agentSpec.error.issues[0];
      return { blocked: true, phase: "Pending", reason: REASON.invalidSpec, message: `Agent '${spec.agentRef.name}' is invalid: ${issue ? formatFieldPath("spec", issue.path) : "spec"}: ${issue?.message ?? ""}` };
    }
    const policy = computeEffectivePolicy(deps.policy());
    if (!policy) return { blocked: true, phase: "Pending", reason: REASON.invalidPolicy, message: "the LeviathPolicy is invalid and no earlier generation was valid; the Run waits" };
    // The admin's ceilings on the untrusted parties' choices: refused, the Run waits and no pod is created.
    const refused = decideRunCeilings(policy.spec.ceilings, spec) ?? decideImageCeiling(policy.spec.ceilings, agentSpec.data.image, deps.settings.defaultRuntimeImage);
    if (refused) return { blocked: true, phase: "Pending", reason: REASON.refusedByPolicy, message: refused.field === "spec.image" ? `Agent '${spec.agentRef.name}': ${refused.message}` : refused.message };
    const key = buildAgentKey(ref.namespace, spec.agentRef.name);
    const findings = computeAgentFindings({ spec: agentSpec.data, name: spec.agentRef.name, key, policy: policy.spec, ...VALIDATION_CONTEXT, advice: CLUSTER_ADVICE });
    const errors = findings.filter((f) => f.severity === "error");
    if (errors.length > 0) return { blocked: true, phase: "Pending", reason: REASON.invalidSpec, message: `Agent '${spec.agentRef.name}' is invalid: ${errors[0]!.message}` };
    const blueprint = await readBlueprintFiles(ref.namespace, spec.agentRef.name, agentSpec.data);
    if ("blocked" in blueprint) return blueprint;
    const result = buildRunSnapshot({
      ...(blueprint.files ? { blueprintFiles: blueprint.files } : {}),
      agent: { name: spec.agentRef.name, namespace: ref.namespace, generation: agentObj.metadata.generation ?? 0, spec: agentSpec.data, written },
      policy,
      run: spec,
      ...(deps.settings.defaultRuntimeImage ? { defaultRuntimeImage: deps.settings.defaultRuntimeImage } : {}),
    });
    return result.ok ? result.value : { blocked: true, phase: "Pending", reason: result.reason, message: result.message };
  }

  async function writeStatus(run: RunObject, ref: RunRef, status: RunStatus): Promise<void> {
    if (isSameStatus(pickControllerFields(run.status), status)) return;
    try {
      await writer.applyStatus("run", ref.namespace, ref.name, status);
      written.set(`${ref.namespace}/${ref.name}`, { fromRv: run.metadata.resourceVersion, status });
    } catch (err) {
      // Deleted while this pass ran (a TTL, a person): there is nothing left to report on.
      if (!isApiStatus(err, 404)) throw err;
      return;
    }
    recordTransitions(referenceOf(ref), run.status?.conditions, status.conditions, RUN_ACTION);
  }

  /** The cached Run, with the status this controller last wrote where the cache has not caught up with it. */
  function withOwnWrite(key: string, cached: RunObject | undefined): RunObject | undefined {
    const own = written.get(key);
    if (own === undefined) return cached;
    if (cached === undefined || own.fromRv !== cached.metadata.resourceVersion) {
      written.delete(key);
      return cached;
    }
    return { ...cached, status: overlayControllerFields(cached.status, own.status) };
  }

  /** One desired pod: created when absent, deleted when its spec changed (pods are immutable); a requeue delay while one terminates. */
  async function syncPod(ref: RunRef, obj: KubeObject, live: boolean): Promise<number | undefined> {
    const current = cache.get("pod", ref.namespace, obj.metadata.name) as PodObject | undefined;
    // An engine pod that ended is the record of the run: never replaced (a new spec would run the agent again).
    if (!live) return undefined;
    if (current?.metadata.deletionTimestamp) return TERMINATING_RECHECK_MS;
    if (current && current.metadata.annotations?.[ANNOTATION.specHash] === obj.metadata.annotations?.[ANNOTATION.specHash] && isOwnedBy(current, ref.uid)) return undefined;
    if (current) {
      // A different spec means delete, then create once it is gone.
      await writer.delete(current);
      return TERMINATING_RECHECK_MS;
    }
    await writer.apply(obj);
    return undefined;
  }

  /**
   * Write the desired children (pods only when absent or changed), then delete owned children no longer desired.
   * A pod waits only for what it cannot go without: its ServiceAccount (admission refuses a pod whose account does
   * not exist) and the NetworkPolicy that isolates it. The Role, RoleBinding and claim go out beside the pods (the
   * kubelet waits for a claim; the sidecar retries its reads until its binding exists), so the first pod is one
   * round trip after the snapshot instead of waiting for every child.
   */
  async function syncChildren(ref: RunRef, desired: KubeObject[], live: boolean): Promise<number | undefined> {
    const owned = cache.listOwnedBy(ref.uid);
    const stale = (obj: KubeObject) => !isApplied(obj, owned.find((o) => o.kind === obj.kind && o.metadata.name === obj.metadata.name));
    const writes = desired.filter((o) => o.kind !== "ConfigMap" && o.kind !== "Pod" && stale(o));
    const prerequisites = settleAll(writes.filter((o) => POD_PREREQUISITES.has(o.kind)).map((o) => writer.apply(o)));
    const others = settleAll(writes.filter((o) => !POD_PREREQUISITES.has(o.kind)).map((o) => writer.apply(o)));
    const pods = prerequisites.then(() => settleAll(desired.filter((o) => o.kind === "Pod").map((o) => syncPod(ref, o, live))));
    // Both settle before the pass goes on (no write still in flight); the first failure is the pass's.
    const [, requeues] = (await settleAll<unknown>([others, pods])) as [unknown, (number | undefined)[]];
    const wanted = new Set(desired.map((o) => `${o.kind}/${o.metadata.name}`));
    await settleAll(owned.filter((o) => !wanted.has(`${o.kind}/${o.metadata.name}`) && !o.metadata.deletionTimestamp).map((o) => writer.delete(o)));
    return requeues.find((r) => r !== undefined);
  }

  /** The part of a pass once the run has its snapshot: decide, write the children, write the status. */
  async function reconcileResolved(run: RunObject, ref: RunRef, spec: RunSpec, snapshot: RunSnapshot, at: { generation: number; nowIso: string; isOver: boolean }): Promise<ReconcileResult> {
    const { name, namespace } = ref;
    const { generation, nowIso, isOver } = at;
    const plan = computeSandboxPlan(name, snapshot.runPolicy);
    const pods = new Map<string, ObservedPod>();
    const ownedNow = cache.listOwnedBy(ref.uid);
    for (const obj of ownedNow) if (obj.kind === "Pod") pods.set(obj.metadata.name, observePod(obj as PodObject));
    const networkEnforcement = deps.networkEnforcement?.() ?? ENFORCEMENT_UNCHECKED;
    const refusal = networkRefusal(run, plan, pods.size > 0, networkEnforcement);
    if (refusal) {
      await writeStatus(run, ref, buildBlockedRunStatus(generation, run.status, "Pending", REASON.networkNotVerified, refusal, nowIso, snapshot.sha256));
      return { requeueAfterMs: NETWORK_REFUSAL_RECHECK_MS };
    }
    const resumed = await resolveResume({ cache, writer, policy: deps.policy }, { ref, annotations: run.metadata.annotations, status: run.status, snapshot, nowIso });
    // Looked up live until the engine pod exists (afterwards the kubelet holds what it needs), and once more when the
    // status seen here does not carry the answer yet (a cache behind our own write would drop the condition).
    const kept = run.status?.conditions?.find((c) => c.type === CONDITION.credentialsReady);
    const credentials = isOver
      ? undefined
      : !pods.has(buildChildNames(name).enginePod) || kept === undefined
        ? await checkCredentials(writer, namespace, snapshot.controller.credentials)
        : { type: kept.type, status: kept.status, reason: kept.reason, message: kept.message };
    const ns = cache.get("namespace", undefined, namespace);
    const decision = decideRun({
      name, spec: spec, previous: run.status, snapshot, plan, pods,
      podSecurity: decidePodSecurityCondition(namespace, ns ? ns.metadata.labels ?? {} : undefined),
      hasRuntimeClass: (rc) => cache.get("runtimeClass", undefined, rc) !== undefined,
      credentials, nowMs: deps.nowMs(), nowIso,
      networkPolicyMissing: await isNetworkPolicyGone(ref, ownedNow, run.status), networkEnforcement,
    });
    const desired = buildRunChildren({
      run: ref, snapshot, settings: deps.settings, sandboxes: decision.sandboxes, hostExec: decision.hostExec, lifecycle: decision.lifecycle,
      ...(decision.draining ? { draining: true } : {}), ...(decision.holdEngine ? { holdEngine: true } : {}),
    });
    let requeue: number | undefined;
    try {
      requeue = await syncChildren(ref, desired, decision.lifecycle === "active");
    } catch (err) {
      // Say on the Run why it is stuck (a Pod Security refusal, a quota), then let the loop retry with backoff.
      const failed = { ...decision, message: `writing the Run's children failed: ${(err as Error).message}` };
      deps.events?.record(referenceOf(ref), { type: "Warning", reason: REASON.failedCreate, action: "Create", note: failed.message });
      await writeStatus(run, ref, buildRunStatus(name, generation, snapshot, failed, run.status, nowIso)).catch(() => undefined);
      throw err;
    }
    const status = buildRunStatus(name, generation, snapshot, decision, run.status, nowIso, resumed);
    await writeStatus(run, ref, status);
    const expiry = TERMINAL_PHASES.includes(decision.phase) ? computeTtlExpiryMs(spec, status) : undefined;
    const after = [requeue, decision.requeueAfterMs, expiry === undefined ? undefined : Math.max(1, expiry - deps.nowMs())].filter((n): n is number => n !== undefined);
    return after.length ? { requeueAfterMs: Math.min(...after) } : {};
  }

  /** The snapshot, unless the run cannot go on with it (credentials in a pod where the model's commands run). */
  async function usableSnapshot(ref: RunRef, spec: RunSpec, status: RunStatus | undefined): Promise<RunSnapshot | Blocked> {
    const snapshot = await snapshotFor(ref, spec, status);
    if ("blocked" in snapshot || snapshot.controller.credentials.length === 0 || !hasHostStages(snapshot.runPolicy)) return snapshot;
    return {
      blocked: true, phase: "Failed", reason: REASON.credentialsOnHost, sha256: snapshot.sha256,
      message: "credentials reach the agent container, and a stage of kind 'none' runs the model's commands there: give every stage a sandbox or drop the credentials",
    };
  }

  /**
   * Whether the Run's NetworkPolicy, applied on an earlier pass (its condition was True), is gone: absent from
   * the cache and, asked live so that a cache still catching up is not taken for a deletion, from the server.
   */
  async function isNetworkPolicyGone(ref: RunRef, owned: readonly KubeObject[], previous: RunStatus | undefined): Promise<boolean> {
    if (owned.some((o) => o.kind === "NetworkPolicy")) return false;
    if (previous?.conditions?.find((c) => c.type === CONDITION.networkIsolated)?.status !== "True") return false;
    return (await writer.read("networkPolicy", ref.namespace, buildChildNames(ref.name).networkPolicy)) === undefined;
  }

  /** Why a Run may not start yet under `onUnverified: refuse` (undefined: it may). */
  function networkRefusal(run: RunObject, plan: ReturnType<typeof computeSandboxPlan>, hasPods: boolean, enforcement: NetworkEnforcementStatus): string | undefined {
    const started = hasPods || TERMINAL_PHASES.includes(run.status?.phase ?? "Pending");
    return decideNetworkRefusal({ plan, started, enforcement, spec: computeEffectivePolicy(deps.policy())?.spec.networkEnforcement });
  }

  return async (key) => {
    const [namespace, name] = key.split("/") as [string, string];
    const run = withOwnWrite(key, cache.get("run", namespace, name) as RunObject | undefined);
    if (!run || run.metadata.deletionTimestamp || !run.metadata.uid) return {};
    const ref: RunRef = { name, namespace, uid: run.metadata.uid };
    const generation = run.metadata.generation ?? 0;
    const nowIso = new Date(deps.nowMs()).toISOString().replace(/\.\d{3}Z$/, "Z");
    const parsed = RunSpecSchema.safeParse(structuredClone(run.spec ?? {}));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const message = `${issue ? formatFieldPath("spec", issue.path) : "spec"}: ${issue?.message ?? "invalid"}`;
      await writeStatus(run, ref, buildBlockedRunStatus(generation, run.status, "Failed", REASON.invalidSpec, message, nowIso));
      return {};
    }
    const ttl = computeTtlExpiryMs(parsed.data, run.status);
    const isOver = run.status?.phase !== undefined && TERMINAL_PHASES.includes(run.status.phase);
    if (isOver && ttl !== undefined && deps.nowMs() >= ttl) {
      // ttlSecondsAfterFinished: the Run goes, and garbage collection takes every child with it.
      await writer.delete(run);
      return {};
    }
    const snapshot = await usableSnapshot(ref, parsed.data, run.status);
    if ("blocked" in snapshot) {
      if (snapshot.phase === "Failed") {
        // A run that can no longer be resolved is over: nothing of it may keep running.
        for (const obj of cache.listOwnedBy(ref.uid)) if (STOPPED_KINDS.has(obj.kind) && !obj.metadata.deletionTimestamp) await writer.delete(obj);
      }
      await writeStatus(run, ref, buildBlockedRunStatus(generation, run.status, snapshot.phase, snapshot.reason, snapshot.message, nowIso, snapshot.sha256));
      return snapshot.recheckMs !== undefined ? { requeueAfterMs: snapshot.recheckMs } : {};
    }
    return reconcileResolved(run, ref, parsed.data, snapshot, { generation, nowIso, isOver });
  };
}
