// Pinning a Run: its start snapshot (`<run>-policy`), resolved once from the Agent and the LeviathPolicy and
// written once (create, never update), then read back and checked by content or digest on every pass
// (start-snapshot.ts). On the pass that writes it, the pass goes on with the snapshot it resolved while the write
// is in flight (`accepted`): the children are built from it and a pod's prerequisites go out beside it, but no
// pod and nothing else before the answer says the ConfigMap on the server is this snapshot.
import { AgentSpecSchema, type AgentSpec } from "../../api/agent.ts";
import type { LeviathPolicySpec } from "../../api/policy.ts";
import type { RunSpec } from "../../api/run.ts";
import { CLUSTER_ADVICE } from "../../api/findings.ts";
import { buildAgentKey } from "../../api/common.ts";
import { REASON, TERMINAL_PHASES, type RunStatus } from "../../api/status.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { computeAgentFindings } from "../../policy/agent-findings.ts";
import { decideRuntimeCeilings, decideRunCeilings } from "../../policy/ceilings.ts";
import { VALIDATION_CONTEXT } from "../../policy/read-paths/index.ts";
import { checkBlueprintFiles, type BlueprintFilesSource } from "../../sandbox/blueprint-files.ts";
import { buildChildNames, type RunRef } from "../../sandbox/names.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import { buildPolicyConfigMap } from "../../sandbox/run-objects.ts";
import { buildRunSnapshot, parseSnapshotData, type RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { hasHostStages } from "../../sandbox/sandbox-plan.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { formatFieldPath } from "../conditions.ts";
import { checkMcpSecrets } from "./mcp-secrets.ts";
import { computeEffectivePolicy, type PolicyState } from "../policy/policy-state.ts";
import { isOwnedBy } from "../owned-children.ts";
import { computeSnapshotDataSha256 } from "../../io/snapshot-digest.ts";
import { checkStartSnapshot } from "./start-snapshot.ts";
import { checkWorkspaceClaim } from "./workspace-claim.ts";
import { failedSnapshot as failed, pendingOn as pending, type Blocked } from "./run-blocked.ts";


/**
 * The snapshot a pass goes on with. `accepted` is set on the pass that writes the ConfigMap: it resolves once the
 * server has answered, to undefined when what holds the name is this snapshot and to why not otherwise (it
 * rejects when the write failed).
 */
export type PinnedSnapshot = RunSnapshot & { accepted?: Promise<Blocked | undefined> };

/** What pinning needs. */
export interface PinningDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  policy: () => PolicyState;
  settings: PodSettings;
}

/** A Run waiting on its Agent's blueprint-files ConfigMap looks again this often (the controller does not watch it). */
const BLUEPRINT_FILES_RECHECK_MS = 5_000;

type ConfigMapObject = KubeObject & { data?: Record<string, string> };

/**
 * What a ConfigMap's data parses and digests to, kept per data object: the informer replaces a cached object
 * when it changes and never changes one in place, so the passes over a pinned Run parse and hash its texts once
 * instead of on every pass. Frozen, as every pass of the Run shares it.
 */
const readings = new WeakMap<Readonly<Record<string, string>>, { sha256: string; parsed: ReturnType<typeof parseSnapshotData> }>();

function readSnapshot(data: Readonly<Record<string, string>>): { sha256: string; parsed: ReturnType<typeof parseSnapshotData> } {
  let read = readings.get(data);
  if (read === undefined) {
    read = deepFreeze({ sha256: computeSnapshotDataSha256(data), parsed: parseSnapshotData(data) });
    readings.set(data, read);
  }
  return read;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}


/** The snapshot the ConfigMap found holds, if it is this run's (owned, and its content or digest as expected). */
function accept(ref: RunRef, cm: ConfigMapObject | undefined, resolved: Record<string, string> | undefined, status: RunStatus | undefined): RunSnapshot | Blocked {
  const name = buildChildNames(ref.name).configMap;
  if (!cm) return failed(`ConfigMap '${name}' holding the pinned run policy is gone; a started Run is never resolved again`);
  if (!isOwnedBy(cm, ref.uid)) return failed(`ConfigMap '${name}' exists and is not owned by this Run`);
  const read = cm.data === undefined ? undefined : readSnapshot(cm.data);
  const mismatch = checkStartSnapshot(name, cm.data, {
    ...(resolved ? { resolved } : {}), ...(status?.snapshotSha256 ? { sha256: status.snapshotSha256 } : {}), neverPinned: status?.agent === undefined && status?.snapshotSha256 === undefined,
  }, read?.sha256);
  if (mismatch !== undefined || read === undefined) return failed(mismatch ?? `ConfigMap '${name}' holds no data`);
  return read.parsed.ok ? { ...read.parsed.value, sha256: read.sha256 } : failed(`ConfigMap '${name}': ${read.parsed.message}`);
}

/**
 * A digest on record is a snapshot this controller wrote and accepted on an earlier pass, even one that then
 * stopped short of pods (a network refusal, credentials beside host stages): it is checked by digest from then
 * on, never against a fresh resolution (the policy may have changed since, as it may for any pinned Run).
 */
function isPinnedBefore(status: RunStatus | undefined): boolean {
  return status?.agent !== undefined || status?.snapshotSha256 !== undefined || (status?.phase !== undefined && TERMINAL_PHASES.includes(status.phase));
}

/** The run's snapshot: read from its ConfigMap, or resolved now and written once (create, never update). */
async function snapshotFor(deps: PinningDeps, ref: RunRef, spec: RunSpec, status: RunStatus | undefined): Promise<PinnedSnapshot | Blocked> {
  const { cache, writer } = deps;
  const name = buildChildNames(ref.name).configMap;
  const cached = cache.get("configMap", ref.namespace, name) as ConfigMapObject | undefined;
  // Pinned before, or over: never resolve again. The cache may only lag, so read the ConfigMap live.
  if (isPinnedBefore(status)) return accept(ref, cached ?? await writer.read("configMap", ref.namespace, name) as ConfigMapObject | undefined, undefined, status);
  // Not pinned yet: whatever holds the name must be exactly what this pass resolves (start-snapshot.ts).
  const fresh = await resolveSnapshot(deps, ref, spec);
  if ("blocked" in fresh) return fresh;
  // Pinned with the rest: which MCP Secrets reach the sidecar is decided once, so the engine pod never changes.
  fresh.controller.mcpSecrets = await checkMcpSecrets(writer, ref.namespace, fresh.runPolicy.mcpServers);
  const desired = buildPolicyConfigMap(ref, fresh) as ConfigMapObject;
  if (cached) return accept(ref, cached, desired.data, status);
  const accepted = writer.createOrGet(desired).then((written) => {
    const found = accept(ref, written as ConfigMapObject, desired.data, status);
    return "blocked" in found ? found : undefined;
  });
  // Awaited later in the pass (at the latest when the pass ends); a failure must not count as unhandled meanwhile.
  accepted.catch(() => undefined);
  // What the write, once accepted, holds: the data this pass resolved.
  const snapshot = accept(ref, desired, desired.data, status);
  if ("blocked" in snapshot) return (await accepted) ?? snapshot;
  return { ...snapshot, accepted };
}

/** The Agent's blueprint files, read live (only Run children are cached) and checked (blueprint-files.ts). */
async function readBlueprintFiles(writer: ClusterWriter, namespace: string, agent: string, spec: AgentSpec): Promise<{ files?: Record<string, string> } | Blocked> {
  const configMap = spec.blueprintFiles?.configMap;
  if (configMap === undefined) return {};
  const source = await writer.read("configMap", namespace, configMap) as (KubeObject & BlueprintFilesSource) | undefined;
  const checked = checkBlueprintFiles(agent, configMap, source);
  if (checked.ok) return { files: checked.files };
  return { ...pending(source ? REASON.blueprintFilesInvalid : REASON.blueprintFilesNotFound, checked.message), recheckMs: BLUEPRINT_FILES_RECHECK_MS };
}

type AgentObject = KubeObject & { spec?: unknown; metadata: { generation?: number } };

/** The Agent the Run names, from the cache, with its spec as written and as parsed; Pending while it is missing or invalid. */
function readAgent(cache: ClusterCache, ref: RunRef, spec: RunSpec): { agentObj: AgentObject; written: Record<string, unknown>; agentSpec: AgentSpec } | Blocked {
  const agentObj = cache.get("agent", ref.namespace, spec.agentRef.name) as AgentObject | undefined;
  if (!agentObj) return pending(REASON.agentNotFound, `Agent '${spec.agentRef.name}' not found in namespace '${ref.namespace}'`);
  const written = structuredClone((agentObj.spec ?? {}) as Record<string, unknown>);
  const agentSpec = AgentSpecSchema.safeParse(written);
  if (agentSpec.success) return { agentObj, written, agentSpec: agentSpec.data };
  const issue = agentSpec.error.issues[0];
  return pending(REASON.invalidSpec, `Agent '${spec.agentRef.name}' is invalid: ${issue ? formatFieldPath("spec", issue.path) : "spec"}: ${issue?.message ?? ""}`);
}

/** The checks of the Run and its Agent against the policy: the ceilings, the workspace claim, the Agent's findings. */
async function checkAgainstPolicy(deps: PinningDeps, ref: RunRef, spec: RunSpec, agent: { spec: AgentSpec; policy: { spec: LeviathPolicySpec } }): Promise<Blocked | undefined> {
  const { policy } = agent;
  // The admin's ceilings on the untrusted parties' choices: refused, the Run waits and no pod is created.
  const agentRefused = decideRuntimeCeilings(policy.spec, agent.spec, deps.settings.defaultRuntimeImage);
  const refused = decideRunCeilings(policy.spec.ceilings, spec) ?? (agentRefused && { ...agentRefused, message: `Agent '${spec.agentRef.name}': ${agentRefused.message}` });
  if (refused) return pending(REASON.refusedByPolicy, refused.message);
  const workspace = await checkWorkspaceClaim(deps, ref, spec.workspace, policy.spec);
  if (workspace) return workspace;
  const key = buildAgentKey(ref.namespace, spec.agentRef.name);
  const findings = computeAgentFindings({ spec: agent.spec, name: spec.agentRef.name, key, policy: policy.spec, ...VALIDATION_CONTEXT, advice: CLUSTER_ADVICE });
  const errors = findings.filter((f) => f.severity === "error");
  if (errors.length > 0) return pending(REASON.invalidSpec, `Agent '${spec.agentRef.name}' is invalid: ${errors[0]!.message}`);
  return undefined;
}

async function resolveSnapshot(deps: PinningDeps, ref: RunRef, spec: RunSpec): Promise<RunSnapshot | Blocked> {
  const agent = readAgent(deps.cache, ref, spec);
  if ("blocked" in agent) return agent;
  const policy = computeEffectivePolicy(deps.policy());
  if (!policy) return pending(REASON.invalidPolicy, "the LeviathPolicy is invalid and no earlier generation was valid; the Run waits");
  const refused = await checkAgainstPolicy(deps, ref, spec, { spec: agent.agentSpec, policy });
  if (refused) return refused;
  const blueprint = await readBlueprintFiles(deps.writer, ref.namespace, spec.agentRef.name, agent.agentSpec);
  if ("blocked" in blueprint) return blueprint;
  const result = buildRunSnapshot({
    ...(blueprint.files ? { blueprintFiles: blueprint.files } : {}),
    agent: { name: spec.agentRef.name, namespace: ref.namespace, generation: agent.agentObj.metadata.generation ?? 0, spec: agent.agentSpec, written: agent.written },
    policy,
    run: spec,
    ...(deps.settings.defaultRuntimeImage ? { defaultRuntimeImage: deps.settings.defaultRuntimeImage } : {}),
  });
  return result.ok ? result.value : pending(result.reason, result.message);
}

/** The snapshot of a Run for this pass, or why it may not go on. */
export function createSnapshotPinner(deps: PinningDeps): (ref: RunRef, spec: RunSpec, status: RunStatus | undefined) => Promise<PinnedSnapshot | Blocked> {
  /** The snapshot, unless the run cannot go on with it (credentials in a pod where the model's commands run). */
  return async (ref, spec, status) => {
    const snapshot = await snapshotFor(deps, ref, spec, status);
    if ("blocked" in snapshot || snapshot.controller.credentials.length === 0 || !hasHostStages(snapshot.runPolicy)) return snapshot;
    // Stopped on the snapshot it resolved: once its write is answered, which also says whether it is the Run's.
    const refused = await snapshot.accepted;
    if (refused) return refused;
    return {
      blocked: true, phase: "Failed", reason: REASON.credentialsOnHost, sha256: snapshot.sha256,
      message: "credentials reach the agent container, and a stage of kind 'none' runs the model's commands there: give every stage a sandbox or drop the credentials",
    };
  };
}
