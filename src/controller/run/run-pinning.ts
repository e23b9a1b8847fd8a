// Pinning a Run: its start snapshot (`<run>-policy`), resolved once from the Agent and the LeviathPolicy and
// written once (create, never update), then read back and checked by content or digest on every pass
// (start-snapshot.ts). In two parts: `gatherPinFacts` reads what pinning needs (the ConfigMap, the Agent, the
// workspace claim, the blueprint files, the MCP Secrets); `decidePin` is pure and says which snapshot the pass goes
// on with, whether it writes it, or why the Run may not go on. On the pass that writes it, the pass goes on with the
// snapshot it resolved while the write is in flight: the children are built from it and a pod's prerequisites go
// out beside it, but no pod and nothing else before the answer says the ConfigMap on the server is this snapshot
// (run-apply.ts).
import { AgentSpecSchema, type AgentSpec } from "../../api/agent.ts";
import type { LeviathPolicySpec } from "../../api/leviath-policy.ts";
import type { RunSpec } from "../../api/run.ts";
import { CLUSTER_ADVICE } from "../../api/findings.ts";
import { buildAgentKey } from "../../api/common.ts";
import { REASON, TERMINAL_PHASES, type RunStatus } from "../../api/status.ts";
import { CLUSTER_POLICY_NAME } from "../../api/constants.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { computeAgentFindings } from "../../policy/agent-findings.ts";
import { decideRuntimeCeilings, decideRunCeilings } from "../../policy/ceilings.ts";
import { VALIDATION_CONTEXT } from "../../policy/read-paths/index.ts";
import { checkBlueprintFiles, type BlueprintFilesSource } from "../../sandbox/blueprint-files.ts";
import { buildChildNames, type RunRef } from "../../sandbox/names.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import { buildPolicyConfigMap } from "../../sandbox/run-objects.ts";
import { buildRunSnapshot, mergeCredentials, parseSnapshotData, type RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { hasHostStages } from "../../sandbox/sandbox-plan.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { formatFieldPath } from "../conditions.ts";
import { checkMcpSecrets, readMcpSecrets, type McpSecretReadings } from "./mcp-secrets.ts";
import { checkCredentialEndpoints, readCredentialEndpoints, type CredentialEndpointsRead } from "./run-credential-endpoints.ts";
import { computeEffectivePolicy, type PolicyState } from "../leviath-policy/policy-state.ts";
import { isOwnedBy } from "../owned-children.ts";
import { computeSnapshotDataSha256 } from "../../io/snapshot-digest.ts";
import { checkStartSnapshot } from "./start-snapshot.ts";
import { checkWorkspaceClaim, readWorkspaceClaim, type WorkspaceClaimReading } from "./workspace-claim.ts";
import { failedSnapshot as failed, pendingOn as pending, type Blocked } from "./run-blocked.ts";


/** What pinning reads; `policy`, `settings`: the LeviathPolicy state and pod settings of the pass. */
export interface PinningDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  policy: () => PolicyState;
  settings: PodSettings;
}

/** A Run waiting for the LeviathPolicy to reach the cache looks again this often. */
const POLICY_CACHE_RECHECK_MS = 1_000;

/** A Run waiting on its Agent's blueprint-files ConfigMap looks again this often (the controller does not watch it). */
const BLUEPRINT_FILES_RECHECK_MS = 5_000;

type ConfigMapObject = KubeObject & { data?: Record<string, string> };
type AgentObject = KubeObject & { spec?: unknown; metadata: { generation?: number } };

/**
 * What pinning saw this pass. A Run pinned before (or over) has only its ConfigMap, read from the cache or, when the
 * cache has none, live. One not pinned yet has what a resolution reads: the ConfigMap under the name (cached), the
 * Agent (cached), and, once the Agent parses and a policy is in force, the workspace claim, the blueprint files and
 * the MCP Secrets' metadata (live).
 */
export type PinFacts =
  | { readonly pinnedBefore: true; readonly configMap: ConfigMapObject | undefined }
  | {
    readonly pinnedBefore: false;
    readonly cached: ConfigMapObject | undefined;
    /**
     * The controller's cache holds no LeviathPolicy while the server has one (the policy's watch is restarting):
     * pinning now would pin upstream's defaults in place of the admin's policy, so the Run waits.
     */
    readonly policyNotCached?: true | undefined;
    readonly agent: AgentObject | undefined;
    readonly workspace?: WorkspaceClaimReading | undefined;
    /** The Agent's blueprint-files ConfigMap as read (absent when the Agent names none). */
    readonly blueprint?: { readonly configMap: string; readonly source: (KubeObject & BlueprintFilesSource) | undefined } | undefined;
    /** Each MCP Secret's metadata by name, as read. */
    readonly mcpSecrets?: McpSecretReadings | undefined;
    /** What each credential Secret ties (its metadata), read when the Run picks a base URL. */
    readonly credentialEndpoints?: readonly CredentialEndpointsRead[] | undefined;
  };

/** What the pure pin decision needs besides the facts: the Run, and the policy and pod settings of the pass. */
export interface PinBasis {
  readonly ref: RunRef;
  readonly spec: RunSpec;
  readonly status: RunStatus | undefined;
  readonly policy: PolicyState;
  readonly settings: PodSettings;
}

/**
 * The pin of this pass: the snapshot it goes on with (`write`: the ConfigMap this pass creates, the snapshot being
 * what it holds once accepted), or why the Run may not go on (`write`: answered first, as a refused write says why
 * instead).
 */
export type PinDecision =
  | { readonly kind: "pinned"; readonly snapshot: RunSnapshot; readonly write?: KubeObject | undefined }
  | { readonly kind: "blocked"; readonly blocked: Blocked; readonly write?: KubeObject | undefined };

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
export function isPinnedBefore(status: RunStatus | undefined): boolean {
  return status?.agent !== undefined || status?.snapshotSha256 !== undefined || (status?.phase !== undefined && TERMINAL_PHASES.includes(status.phase));
}

/** The Agent the Run names, as cached, with its spec as written and as parsed; Pending while it is missing or invalid. */
function readAgent(agentObj: AgentObject | undefined, ref: RunRef, spec: RunSpec): { agentObj: AgentObject; written: Record<string, unknown>; agentSpec: AgentSpec } | Blocked {
  if (!agentObj) return pending(REASON.agentNotFound, `Agent '${spec.agentRef.name}' not found in namespace '${ref.namespace}'`);
  const written = structuredClone((agentObj.spec ?? {}) as Record<string, unknown>);
  const agentSpec = AgentSpecSchema.safeParse(written);
  if (agentSpec.success) return { agentObj, written, agentSpec: agentSpec.data };
  const issue = agentSpec.error.issues[0];
  return pending(REASON.invalidSpec, `Agent '${spec.agentRef.name}' is invalid: ${issue ? formatFieldPath("spec", issue.path) : "spec"}: ${issue?.message ?? ""}`);
}

/**
 * Reads what pinning needs: a Run pinned before, its ConfigMap (live when the cache has none: the cache may only
 * lag); one not pinned yet, what its resolution reads, live where only Run children are cached. Nothing is decided
 * here but what is worth reading: past a missing or invalid Agent, or without a policy in force, nothing more is.
 */
export async function gatherPinFacts(deps: PinningDeps, ref: RunRef, spec: RunSpec, status: RunStatus | undefined): Promise<PinFacts> {
  const { cache, writer } = deps;
  const name = buildChildNames(ref.name).configMap;
  const cached = cache.get("configMap", ref.namespace, name) as ConfigMapObject | undefined;
  if (isPinnedBefore(status)) return { pinnedBefore: true, configMap: cached ?? await writer.read("configMap", ref.namespace, name) as ConfigMapObject | undefined };
  const agent = cache.get("agent", ref.namespace, spec.agentRef.name) as AgentObject | undefined;
  const parsed = readAgent(agent, ref, spec);
  const policy = computeEffectivePolicy(deps.policy());
  if ("blocked" in parsed || !policy) return { pinnedBefore: false, cached, agent };
  // Upstream's defaults are pinned only when the server, not just the cache, has no policy (read only by a pass that would pin).
  if (deps.policy().kind === "absent" && await writer.readMetadata("policy", undefined, CLUSTER_POLICY_NAME) !== undefined) return { pinnedBefore: false, cached, agent, policyNotCached: true };
  const credentials = mergeCredentials(parsed.agentSpec.credentials ?? [], spec.credentials ?? []);
  const [workspace, blueprint, mcpSecrets, credentialEndpoints] = await Promise.all([
    readWorkspaceClaim(deps, ref, spec.workspace),
    readBlueprintFiles(writer, ref.namespace, parsed.agentSpec),
    readMcpSecrets(writer, ref.namespace, policy.spec.mcpServers),
    readCredentialEndpoints(writer, ref.namespace, { runtime: spec.runtime, credentials }),
  ]);
  return { pinnedBefore: false, cached, agent, workspace, ...(blueprint ? { blueprint } : {}), mcpSecrets, ...(credentialEndpoints ? { credentialEndpoints } : {}) };
}

/** The Agent's blueprint-files ConfigMap, read live (only Run children are cached); undefined when it names none. */
async function readBlueprintFiles(writer: ClusterWriter, namespace: string, spec: AgentSpec): Promise<{ configMap: string; source: (KubeObject & BlueprintFilesSource) | undefined } | undefined> {
  const configMap = spec.blueprintFiles?.configMap;
  if (configMap === undefined) return undefined;
  return { configMap, source: await writer.read("configMap", namespace, configMap) as (KubeObject & BlueprintFilesSource) | undefined };
}

/** The Agent's blueprint files as read, checked (blueprint-files.ts). */
function checkBlueprint(agent: string, blueprint: NonNullable<Extract<PinFacts, { pinnedBefore: false }>["blueprint"]> | undefined): { files?: Record<string, string> } | Blocked {
  if (blueprint === undefined) return {};
  const checked = checkBlueprintFiles(agent, blueprint.configMap, blueprint.source);
  if (checked.ok) return { files: checked.files };
  return { ...pending(checked.reason, checked.message), recheckMs: BLUEPRINT_FILES_RECHECK_MS };
}

/** The checks of the Run and its Agent against the policy: the ceilings, the workspace claim, the Agent's findings. */
function checkAgainstPolicy(basis: PinBasis, workspace: WorkspaceClaimReading | undefined, agent: { spec: AgentSpec; policy: { spec: LeviathPolicySpec } }): Blocked | undefined {
  const { ref, spec } = basis;
  const { policy } = agent;
  // The admin's ceilings on the untrusted parties' choices: refused, the Run waits and no pod is created.
  const agentRefused = decideRuntimeCeilings(policy.spec, agent.spec, basis.settings.defaultRuntimeImage);
  const refused = decideRunCeilings(policy.spec.ceilings, spec) ?? (agentRefused && { ...agentRefused, message: `Agent '${spec.agentRef.name}': ${agentRefused.message}` });
  if (refused) return pending(REASON.refusedByPolicy, refused.message);
  const claim = workspace === undefined ? undefined : checkWorkspaceClaim(workspace, ref, spec.workspace, policy.spec);
  if (claim) return claim;
  const key = buildAgentKey(ref.namespace, spec.agentRef.name);
  const findings = computeAgentFindings({ spec: agent.spec, name: spec.agentRef.name, key, policy: policy.spec, ...VALIDATION_CONTEXT, advice: CLUSTER_ADVICE });
  const errors = findings.filter((f) => f.severity === "error");
  if (errors.length > 0) return pending(REASON.invalidSpec, `Agent '${spec.agentRef.name}' is invalid: ${errors[0]!.message}`);
  return undefined;
}

/** The snapshot the Agent and the policy resolve to now (with which MCP Secrets reach the sidecar), or why not. */
function resolveSnapshot(basis: PinBasis, facts: Extract<PinFacts, { pinnedBefore: false }>): RunSnapshot | Blocked {
  const { ref, spec, settings } = basis;
  const agent = readAgent(facts.agent, ref, spec);
  if ("blocked" in agent) return agent;
  const policy = computeEffectivePolicy(basis.policy);
  if (!policy) return pending(REASON.invalidPolicy, "the LeviathPolicy is invalid and no earlier generation was valid; the Run waits");
  const refused = checkAgainstPolicy(basis, facts.workspace, { spec: agent.agentSpec, policy });
  if (refused) return refused;
  const blueprint = checkBlueprint(spec.agentRef.name, facts.blueprint);
  if ("blocked" in blueprint) return blueprint;
  const result = buildRunSnapshot({
    ...(blueprint.files ? { blueprintFiles: blueprint.files } : {}),
    agent: { name: spec.agentRef.name, namespace: ref.namespace, generation: agent.agentObj.metadata.generation ?? 0, spec: agent.agentSpec, written: agent.written },
    policy,
    run: spec,
    ...(settings.defaultRuntimeImage ? { defaultRuntimeImage: settings.defaultRuntimeImage } : {}),
  });
  if (!result.ok) return pending(result.reason, result.message);
  // Pinned with the rest: which MCP Secrets reach the sidecar is decided once, so the engine pod never changes.
  result.value.controller.mcpSecrets = checkMcpSecrets(facts.mcpSecrets ?? new Map(), ref.namespace, result.value.runPolicy.mcpServers);
  // A base URL the Run picks gets a key only where the credential Secrets tie it: checked, and the ties pinned.
  const tied = checkCredentialEndpoints(spec.runtime, facts.credentialEndpoints);
  if ("blocked" in tied) return tied;
  if (tied.ties) result.value.runtime.credentialEndpoints = tied.ties.map((t) => ({ secretName: t.secretName, endpoints: [...t.endpoints] }));
  return result.value;
}

/**
 * The run's snapshot: read from its ConfigMap, or resolved now and written once (create, never update). `accepted`:
 * the answer of this pass's write, once the applier has it (run-apply.ts): undefined before, true when what holds
 * the name is this snapshot, or why not.
 */
function snapshotFor(basis: PinBasis, facts: PinFacts, answer: true | Blocked | undefined): PinDecision {
  const { ref, status } = basis;
  const of = (found: RunSnapshot | Blocked, write?: KubeObject): PinDecision => ("blocked" in found ? { kind: "blocked", blocked: found, write } : { kind: "pinned", snapshot: found, write });
  // Pinned before, or over: never resolve again.
  if (facts.pinnedBefore) return of(accept(ref, facts.configMap, undefined, status));
  if (facts.policyNotCached) return of({ ...pending(REASON.policyNotCached, `LeviathPolicy '${CLUSTER_POLICY_NAME}' exists but has not reached the controller's cache yet; the Run waits rather than pin upstream's defaults`), recheckMs: POLICY_CACHE_RECHECK_MS });
  // Not pinned yet: whatever holds the name must be exactly what this pass resolves (start-snapshot.ts).
  const fresh = resolveSnapshot(basis, facts);
  if ("blocked" in fresh) return of(fresh);
  const desired = buildPolicyConfigMap(ref, fresh) as ConfigMapObject;
  if (facts.cached) return of(accept(ref, facts.cached, desired.data, status));
  if (answer !== undefined && answer !== true) return of(answer);
  // What the write, once accepted, holds: the data this pass resolved.
  return of(accept(ref, desired, desired.data, status), answer === true ? undefined : desired);
}

/**
 * The pin of a pass, pure: the snapshot, unless the run cannot go on with it (credentials in a pod where the
 * model's commands run: decided on the snapshot it resolved once its write is answered, which also says whether
 * it is the Run's).
 */
export function decidePin(basis: PinBasis, facts: PinFacts, answer?: true | Blocked): PinDecision {
  const decided = snapshotFor(basis, facts, answer);
  if (decided.kind === "blocked") return decided;
  const { snapshot, write } = decided;
  if (snapshot.controller.credentials.length === 0 || !hasHostStages(snapshot.runPolicy)) return decided;
  return {
    kind: "blocked", write,
    blocked: {
      blocked: true, phase: "Failed", reason: REASON.credentialsOnHost, sha256: snapshot.sha256,
      message: "credentials reach the agent container, and a stage of kind 'none' runs the model's commands there: give every stage a sandbox or drop the credentials",
    },
  };
}

/**
 * The answer of a start snapshot's write: true when what holds the name (`written`, as the create returned it) is
 * the snapshot the pass resolved, or why not.
 */
export function answerPinWrite(basis: Pick<PinBasis, "ref" | "status">, desired: KubeObject, written: KubeObject): true | Blocked {
  const found = accept(basis.ref, written as ConfigMapObject, (desired as ConfigMapObject).data, basis.status);
  return "blocked" in found ? found : true;
}
