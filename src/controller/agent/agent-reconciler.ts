import { API_VERSION, CLUSTER_POLICY_NAME, KIND } from "../../api/constants.ts";
import type { EventSink } from "../../kube/event-recorder.ts";
import { CONDITION, REASON } from "../../api/status.ts";
import type { AgentStatus, NetworkEnforcementStatus } from "../../api/status.ts";
import { computeAgentStatus } from "./agent-status.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "../cluster-port.ts";
import { buildConditions, isSameStatus } from "../conditions.ts";
import { parseObjectKey } from "../object-key.ts";
import type { PolicyState } from "../policy/policy-state.ts";
import { decideValidReadiness } from "../readiness.ts";
import { createTransitionRecorder } from "../status-events.ts";

/** What the Agent reconciler needs. */
export interface AgentReconcilerDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  policy: () => PolicyState;
  nowIso: () => string;
  /** The controller's runtime image (`--runtime-image`), always allowed by the policy's image ceiling. */
  defaultRuntimeImage?: string | undefined;
  /** The NetworkPolicy probe's last finding, reported on the policy's status. */
  networkEnforcement?: () => NetworkEnforcementStatus;
  /** Where the Events of status transitions go (none: not recorded). */
  events?: EventSink;
}

type AgentObject = { spec?: unknown; status?: AgentStatus; metadata: { generation?: number; uid?: string } };

/** The `action` of the Events of Agent and policy validation. */
const VALIDATE_ACTION = "Validate";

/** Reconcile one Agent: validate it against the current policy and write the status when it changed. */
export function createAgentReconciler(deps: AgentReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const recordTransitions = createTransitionRecorder(deps.events);
  return async (key) => {
    const { namespace, name } = parseObjectKey(key);
    if (namespace === undefined) return {};
    const obj = deps.cache.get("agent", namespace, name) as (AgentObject & { metadata: { name: string } }) | undefined;
    if (!obj) return {};
    const status = computeAgentStatus({
      namespace,
      name,
      generation: obj.metadata.generation ?? 0,
      spec: structuredClone(obj.spec),
      policy: deps.policy(),
      previous: obj.status,
      now: deps.nowIso(),
      ...(deps.defaultRuntimeImage ? { defaultRuntimeImage: deps.defaultRuntimeImage } : {}),
    });
    if (isSameStatus(obj.status, status)) return {};
    await deps.writer.applyStatus("agent", namespace, name, status);
    const regarding = { apiVersion: API_VERSION, kind: KIND.agent, name, namespace, ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}) };
    recordTransitions(regarding, obj.status?.conditions, status.conditions, VALIDATE_ACTION);
    return {};
  };
}

/** Reconcile the cluster policy: report whether it is valid (and which generation is in force) on its status. */
export function createPolicyReconciler(deps: AgentReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const recordTransitions = createTransitionRecorder(deps.events);
  return async () => {
    const obj = deps.cache.get("policy", undefined, CLUSTER_POLICY_NAME) as (AgentObject & { status?: { conditions?: AgentStatus["conditions"] } }) | undefined;
    if (!obj) return {};
    const state = deps.policy();
    const generation = obj.metadata.generation ?? 0;
    const decided = state.kind === "invalid"
      ? { type: CONDITION.valid, status: "False" as const, reason: REASON.invalidSpec, message: `${state.message}; ${state.lastGood ? `generation ${state.lastGood.generation} stays in force` : "no valid generation: new Runs wait"}` }
      : { type: CONDITION.valid, status: "True" as const, reason: REASON.valid, message: "in force for new Runs" };
    const enforcement = deps.networkEnforcement?.();
    const status = {
      observedGeneration: generation,
      conditions: buildConditions(obj.status?.conditions, [decided, ...decideValidReadiness(decided)], deps.nowIso(), generation),
      ...(enforcement ? { networkEnforcement: enforcement } : {}),
    };
    if (isSameStatus(obj.status, status)) return {};
    await deps.writer.applyStatus("policy", undefined, CLUSTER_POLICY_NAME, status);
    const regarding = { apiVersion: API_VERSION, kind: KIND.policy, name: CLUSTER_POLICY_NAME, ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}) };
    recordTransitions(regarding, obj.status?.conditions, status.conditions, VALIDATE_ACTION);
    return {};
  };
}
