import { API_VERSION, CLUSTER_POLICY_NAME, KIND } from "../../api/constants.ts";
import { CONDITION, REASON, type AgentStatus, type NetworkEnforcementStatus } from "../../api/status.ts";
import type { EventSink } from "../../kube/event-recorder.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "../cluster-port.ts";
import { buildConditions, isSameStatus, type ConditionDecision } from "../conditions.ts";
import { decideValidReadiness } from "../readiness.ts";
import { createTransitionRecorder, VALIDATE_ACTION } from "../status-events.ts";
import type { PolicyState } from "./policy-state.ts";
import { buildPoolStatusFields } from "../pool/pool-reconciler.ts";
import type { PoolLedger } from "../pool/pool-ledger.ts";
import { CLUSTER_ADVICE } from "../../api/findings.ts";
import { computePolicyFindings } from "../../policy/policy-findings.ts";
import type { EnforcementMode } from "../../api/leviath-policy.ts";
import { buildEnforcedRecord, decideModeChange, type EnforcedRecord } from "./enforced-policy.ts";

/** Most findings the policy's status lists (its schema's bound). */
const MAX_POLICY_FINDINGS = 100;

/** What the policy reconciler needs. */
export interface PolicyReconcilerDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  policy: () => PolicyState;
  nowIso: () => string;
  /** The NetworkPolicy probe's last finding, reported on the policy's status. */
  networkEnforcement?: () => NetworkEnforcementStatus;
  /** Where the Events of status transitions go (none: not recorded). */
  events?: EventSink;
  /** What the warm pools served (only with warm pools on). */
  pools?: PoolLedger | undefined;
}

/** The rollout part of the policy's status: the mode seen, and the generation in force when it was enforced. */
function buildRolloutStatus(obj: PolicyObject, state: PolicyState): { enforcement?: EnforcementMode; inForce?: EnforcedRecord } {
  const previous = obj.status?.inForce ? { inForce: obj.status.inForce } : {};
  if (state.kind !== "valid") return { ...(obj.status?.enforcement ? { enforcement: obj.status.enforcement } : {}), ...previous };
  if (state.candidate) return { enforcement: state.candidate.enforcement, ...previous };
  return { enforcement: "enforce", inForce: buildEnforcedRecord(obj.spec, state.generation) };
}

type PolicyObject = {
  spec?: unknown;
  status?: { conditions?: AgentStatus["conditions"]; enforcement?: EnforcementMode; inForce?: EnforcedRecord };
  metadata: { generation?: number; uid?: string };
};

/** A change of the enforcement mode, once, when the status first records it: an Event on the policy (who made it is the API server's audit log). */
function recordModeChange(deps: PolicyReconcilerDeps, regarding: Parameters<EventSink["record"]>[0], change: { before: EnforcementMode | undefined; after: EnforcementMode | undefined; generation: number; inForce: number | undefined }): void {
  if (change.after === undefined) return;
  const moved = decideModeChange(change.before, change.after);
  if (moved === undefined) return;
  const note = `enforcement ${change.before} -> ${change.after} at generation ${change.generation}${change.after === "enforce" ? "" : `; generation ${change.inForce ?? "none"} stays in force and this one is a candidate`}`;
  deps.events?.record(regarding, { type: moved === "loosened" ? "Warning" : "Normal", reason: moved === "loosened" ? "EnforcementLoosened" : "EnforcementTightened", action: "Rollout", note });
}

/** The policy's Valid condition: in force, a candidate beside the generation in force, or invalid. */
function decideValidCondition(state: PolicyState, findings: number): ConditionDecision {
  if (state.kind === "invalid") {
    return { type: CONDITION.valid, status: "False", reason: REASON.invalidSpec, message: `${state.message}; ${state.lastGood ? `generation ${state.lastGood.generation} stays in force` : "no valid generation: new Runs wait"}` };
  }
  const warned = findings > 0 ? `, with ${findings} warning${findings > 1 ? "s" : ""} (status.findings)` : "";
  const candidate = state.kind === "valid" ? state.candidate : undefined;
  const message = candidate === undefined
    ? `in force for new Runs${warned}`
    : `a ${candidate.enforcement} candidate${warned}: generation ${state.kind === "valid" ? state.generation : 0} stays in force, and every call is decided under both`;
  return { type: CONDITION.valid, status: "True", reason: REASON.valid, message };
}

/** Reconcile the cluster policy: report whether it is valid (and which generation is in force) on its status. */
export function createPolicyReconciler(deps: PolicyReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const recordTransitions = createTransitionRecorder(deps.events);
  return async () => {
    const obj = deps.cache.get("policy", undefined, CLUSTER_POLICY_NAME) as PolicyObject | undefined;
    if (!obj) return {};
    const state = deps.policy();
    const generation = obj.metadata.generation ?? 0;
    const findings = state.kind === "valid" ? computePolicyFindings(state.candidate?.spec ?? state.spec, CLUSTER_ADVICE).slice(0, MAX_POLICY_FINDINGS) : [];
    const decided = decideValidCondition(state, findings.length);
    const enforcement = deps.networkEnforcement?.();
    const status = {
      observedGeneration: generation,
      conditions: buildConditions(obj.status?.conditions, [decided, ...decideValidReadiness(decided)], deps.nowIso(), generation),
      ...(findings.length > 0 ? { findings } : {}),
      ...(enforcement ? { networkEnforcement: enforcement } : {}),
      ...buildPoolStatusFields(deps.cache, state, deps.pools),
      ...buildRolloutStatus(obj, state),
    };
    if (isSameStatus(obj.status, status)) return {};
    await deps.writer.applyStatus("policy", undefined, CLUSTER_POLICY_NAME, status);
    const regarding = { apiVersion: API_VERSION, kind: KIND.policy, name: CLUSTER_POLICY_NAME, ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}) };
    recordTransitions(regarding, obj.status?.conditions, status.conditions, VALIDATE_ACTION);
    recordModeChange(deps, regarding, { before: obj.status?.enforcement, after: status.enforcement, generation, inForce: state.kind === "valid" ? state.generation : undefined });
    return {};
  };
}
