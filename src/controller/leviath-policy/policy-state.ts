import { CLUSTER_POLICY_NAME } from "../../api/constants.ts";
import { EMPTY_POLICY, LeviathPolicySpecSchema, type LeviathPolicySpec } from "../../api/leviath-policy.ts";
import { formatFieldPath } from "../conditions.ts";
import { decideInForce, type EnforcedRecord, type PolicyCandidate } from "./enforced-policy.ts";

/** A policy that parsed, and the generation it came from. */
export interface GoodPolicy {
  spec: LeviathPolicySpec;
  generation: number;
  /** The policy object's uid: what the network probe's objects name as their owner. */
  uid?: string;
}

/**
 * The cluster policy as the controllers see it. `valid` is the policy in force (what new Runs pin); while the
 * object's generation is a `warn` or `audit` candidate, that is the last `enforce` generation and `candidate` is the
 * object's own.
 */
export type PolicyState =
  | { kind: "absent" }
  | ({ kind: "valid"; candidate?: PolicyCandidate } & GoodPolicy)
  | { kind: "invalid"; generation: number; message: string; lastGood?: GoodPolicy };

type PolicyObject = { spec?: unknown; metadata?: { generation?: number; uid?: string }; status?: { inForce?: EnforcedRecord } };

/** A spec that parsed: in force when enforced, else a candidate beside the generation in force. */
function computeParsedState(obj: PolicyObject, spec: LeviathPolicySpec, lastGood: GoodPolicy | undefined): PolicyState {
  const generation = obj.metadata?.generation ?? 0;
  const uid = obj.metadata?.uid ? { uid: obj.metadata.uid } : {};
  if (spec.enforcement === "enforce") return { kind: "valid", spec, generation, ...uid };
  const inForce = decideInForce(lastGood, obj.status?.inForce);
  if (!inForce.ok) return { kind: "invalid", generation, message: inForce.message };
  return { kind: "valid", spec: inForce.value.spec, generation: inForce.value.generation, ...uid, candidate: { spec, generation, enforcement: spec.enforcement } };
}

/** Parse the LeviathPolicy object (if any); an invalid one keeps the last valid generation, as upstream's last-good config. */
export function computePolicyState(obj: PolicyObject | undefined, lastGood: GoodPolicy | undefined): PolicyState {
  if (!obj) return { kind: "absent" };
  const parsed = LeviathPolicySpecSchema.safeParse(obj.spec ?? {});
  if (parsed.success) return computeParsedState(obj, parsed.data, lastGood);
  const issue = parsed.error.issues[0];
  const message = issue ? `${formatFieldPath("spec", issue.path)}: ${issue.message}` : "invalid";
  // After a restart the last enforced generation on record is the one to fall back on.
  const recorded = lastGood ? undefined : decideInForce(undefined, obj.status?.inForce);
  const good = lastGood ?? (recorded?.ok === true && recorded.recorded ? recorded.value : undefined);
  return { kind: "invalid", generation: obj.metadata?.generation ?? 0, message, ...(good ? { lastGood: good } : {}) };
}

/**
 * The policy to evaluate against: the valid one, else the last valid one, else (no policy object at all)
 * upstream's defaults. `undefined` means there is an invalid policy and nothing to fall back on: fail closed.
 */
export function computeEffectivePolicy(state: PolicyState): { name: string; spec: LeviathPolicySpec; generation?: number; uid?: string } | undefined {
  if (state.kind === "valid") return { name: CLUSTER_POLICY_NAME, spec: state.spec, generation: state.generation, ...(state.uid ? { uid: state.uid } : {}) };
  if (state.kind === "invalid") return state.lastGood ? { name: CLUSTER_POLICY_NAME, ...state.lastGood } : undefined;
  return { name: CLUSTER_POLICY_NAME, spec: EMPTY_POLICY };
}
