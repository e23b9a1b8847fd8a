import type { NetworkEnforcementSpec } from "../../api/leviath-policy.ts";
import { CONDITION, REASON, type Condition, type NetworkEnforcementStatus as NetworkEnforcement } from "../../api/status.ts";
import type { SandboxPlan } from "../../sandbox/sandbox-plan.ts";
import type { ConditionDecision } from "../conditions.ts";

/** Enforcement when the admin has not asked for a probe. */
export const ENFORCEMENT_UNCHECKED: NetworkEnforcement = { state: "Unknown", message: "not verified on this cluster (spec.networkEnforcement.verify is off in the LeviathPolicy)" };

/** Everything the NetworkIsolated condition is decided from. */
export interface NetworkConditionInput {
  policyName: string;
  /** Stages whose sandbox has `network = false`; none means no condition. */
  closedStages: readonly string[];
  /** Of those, the stages that fell back to the engine pod (which has network). */
  fallbackStages: readonly string[];
  /** The policy existed on an earlier pass (the condition was True) and is gone from the cache now. */
  policyMissing: boolean;
  enforcement: NetworkEnforcement;
  previous: Condition | undefined;
  nowIso: string;
}

function enforcementClause(e: NetworkEnforcement): string {
  if (e.state === "Verified") return `enforcement verified on this cluster${e.checkedAt ? ` at ${e.checkedAt}` : ""}`;
  if (e.state === "NotEnforced") return `the cluster does NOT enforce NetworkPolicy: ${e.message}`;
  return `applied, enforcement not verified: ${e.message}`;
}

/** What the cluster's enforcement makes of an applied policy: True only when verified, False when seen ignored, else Unknown. */
function statusOf(e: NetworkEnforcement): Condition["status"] {
  if (e.state === "Verified") return "True";
  return e.state === "NotEnforced" ? "False" : "Unknown";
}

/** The reasons of a NetworkIsolated condition written once the Run's NetworkPolicy had been applied. */
const APPLIED_REASONS: readonly string[] = [REASON.networkPolicyApplied, REASON.networkPolicyEnforced, REASON.networkNotEnforced, REASON.networkPolicyRestored];

/**
 * Whether a NetworkIsolated condition says the Run's NetworkPolicy was applied on an earlier pass (whatever the
 * cluster's enforcement made of it): a policy missing now was then deleted, not yet to be made.
 */
export function isNetworkPolicyApplied(previous: Condition | undefined): boolean {
  return previous !== undefined && APPLIED_REASONS.includes(previous.reason);
}

/**
 * The Run's NetworkIsolated condition. It tells "a NetworkPolicy was applied" (`NetworkPolicyApplied`) from
 * "and the cluster was seen to drop packets for it" (`NetworkPolicyEnforced`) and from "the cluster was seen
 * not to" (`NetworkNotEnforced`, False). Its status is True only when enforcement was verified: an applied policy
 * whose enforcement nobody checked is `Unknown` (a plugin that ignores NetworkPolicy leaves the pods open). A
 * policy deleted behind the operator's back is re-created in the same pass and the condition says so
 * (`NetworkPolicyRestored`) for the rest of the Run: the pods were unprotected in between.
 */
export function decideNetworkCondition(input: NetworkConditionInput): ConditionDecision | undefined {
  if (input.closedStages.length === 0) return undefined;
  const type = CONDITION.networkIsolated;
  if (input.fallbackStages.length > 0) {
    return { type, status: "False", reason: REASON.fellBackToHost, message: `stages ${input.fallbackStages.join(", ")} run in the engine pod, which has network access` };
  }
  const previous = input.previous;
  const clause = enforcementClause(input.enforcement);
  if (previous?.reason === REASON.networkPolicyRestored) {
    // Keep the time of the restore; only the enforcement clause may change.
    const kept = previous.message.split("; ")[0];
    return { type, status: statusOf(input.enforcement), reason: REASON.networkPolicyRestored, message: `${kept}; ${clause}` };
  }
  if (input.policyMissing && isNetworkPolicyApplied(previous)) {
    return {
      type, status: statusOf(input.enforcement), reason: REASON.networkPolicyRestored,
      message: `NetworkPolicy '${input.policyName}' was missing and was re-created at ${input.nowIso} (the sandbox pods were not isolated in between); ${clause}`,
    };
  }
  const base = `NetworkPolicy '${input.policyName}' denies all ingress and egress of the sandbox pods`;
  if (input.enforcement.state === "Verified") return { type, status: "True", reason: REASON.networkPolicyEnforced, message: `${base}; ${clause}` };
  if (input.enforcement.state === "NotEnforced") return { type, status: "False", reason: REASON.networkNotEnforced, message: `${base}, but ${clause}` };
  return { type, status: "Unknown", reason: REASON.networkPolicyApplied, message: `${base}; ${clause}` };
}

/**
 * `onUnverified: refuse`: a Run with a `network = false` sandbox does not start (stays Pending, with this message)
 * until the probe has verified enforcement. A Run whose pods exist already is not stopped by it; its condition
 * turns False if the probe finds the cluster does not enforce.
 */
export function decideNetworkRefusal(input: { plan: readonly SandboxPlan[]; started: boolean; enforcement: NetworkEnforcement; spec: NetworkEnforcementSpec | undefined }): string | undefined {
  if (input.spec?.onUnverified !== "refuse" || input.started || input.enforcement.state === "Verified") return undefined;
  const closed = input.plan.filter((p) => !p.network);
  if (closed.length === 0) return undefined;
  return `stages ${closed.flatMap((p) => p.stages).join(", ")} need network = false, and NetworkPolicy enforcement is not verified on this cluster `
    + `(LeviathPolicy spec.networkEnforcement.onUnverified is refuse): ${input.enforcement.state}: ${input.enforcement.message}`;
}
