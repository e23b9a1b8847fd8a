import { AgentSpecSchema } from "../api/agent.ts";
import { CONDITION, REASON, type AgentStatus, type Finding } from "../api/status.ts";
import { decideImageCeiling } from "../policy/ceilings.ts";
import { resolveStageSandboxes } from "../policy/sandbox-resolve.ts";
import { computeAgentFindings, INVALID_BLUEPRINT } from "./agent-findings.ts";
import { buildConditions, formatFieldPath, type ConditionDecision } from "./conditions.ts";
import { computeEffectivePolicy, type PolicyState } from "./policy-state.ts";
import { buildAgentKey } from "../api/common.ts";

/** Everything the Agent status is computed from. */
export interface AgentStatusInput {
  namespace: string;
  name: string;
  generation: number;
  spec: unknown;
  policy: PolicyState;
  previous: AgentStatus | undefined;
  /** RFC 3339 now, for condition transitions. */
  now: string;
  /** The controller's runtime image, always allowed by the image ceiling. */
  defaultRuntimeImage?: string;
}

/** The code of the finding that says the policy refuses the Agent's runtime image. */
export const IMAGE_NOT_ALLOWED = "runtime-image-not-allowed";

function invalid(input: AgentStatusInput, findings: Finding[], reason: string): AgentStatus {
  const decided: ConditionDecision = { type: CONDITION.valid, status: "False", reason, message: findings.map((f) => f.message).join("; ") };
  return {
    observedGeneration: input.generation,
    valid: false,
    findings,
    conditions: buildConditions(input.previous?.conditions, [decided], input.now, input.generation),
  };
}

/**
 * The Agent status: the spec parsed at the boundary (a schema violation is a finding naming the field), then
 * validated against the effective policy: findings, read paths granted/declared, and each stage's sandbox.
 */
export function computeAgentStatus(input: AgentStatusInput): AgentStatus {
  const parsed = AgentSpecSchema.safeParse(input.spec ?? {});
  if (!parsed.success) {
    const findings = parsed.error.issues.map((i): Finding => ({ severity: "error", code: INVALID_BLUEPRINT, message: `${formatFieldPath("spec", i.path)}: ${i.message}` }));
    return invalid(input, findings, REASON.invalidSpec);
  }
  const spec = parsed.data;
  if (spec.agent.name !== undefined && spec.agent.name !== input.name) {
    const message = `spec.agent.name: '${spec.agent.name}' differs from metadata.name '${input.name}'; an Agent is identified by namespace/name`;
    return invalid(input, [{ severity: "error", code: INVALID_BLUEPRINT, message }], REASON.invalidSpec);
  }
  const policy = computeEffectivePolicy(input.policy);
  if (!policy) {
    const message = input.policy.kind === "invalid" ? `the LeviathPolicy is invalid (${input.policy.message}) and no earlier version was valid` : "no policy";
    const decided: ConditionDecision = { type: CONDITION.valid, status: "Unknown", reason: REASON.invalidPolicy, message };
    return { observedGeneration: input.generation, conditions: buildConditions(input.previous?.conditions, [decided], input.now, input.generation) };
  }
  const { findings, readPaths } = computeAgentFindings(spec, buildAgentKey(input.namespace, input.name), policy.spec);
  const refused = decideImageCeiling(policy.spec.ceilings, spec.image, input.defaultRuntimeImage);
  if (refused) return invalid(input, [{ severity: "error", code: IMAGE_NOT_ALLOWED, message: refused.message }, ...findings], REASON.refusedByPolicy);
  const errors = findings.filter((f) => f.severity === "error");
  if (errors.length > 0) return invalid(input, findings, REASON.invalidSpec);
  const sandboxes = resolveStageSandboxes(spec, policy.spec.sandbox).map(({ stage, sandbox }) => ({
    stage,
    kind: sandbox.kind,
    ...(sandbox.image !== undefined ? { image: sandbox.image } : {}),
    network: sandbox.network,
    mounts: sandbox.mounts,
    ...(sandbox.runtimeClassName !== undefined ? { runtimeClassName: sandbox.runtimeClassName } : {}),
    onUnavailable: sandbox.onUnavailable,
    source: sandbox.source,
  }));
  const warnings = findings.filter((f) => f.severity === "warning").length;
  const decided: ConditionDecision = {
    type: CONDITION.valid,
    status: "True",
    reason: REASON.valid,
    message: warnings > 0 ? `valid, with ${warnings} warning${warnings > 1 ? "s" : ""}` : "valid",
  };
  return {
    observedGeneration: input.generation,
    ...(policy.generation !== undefined ? { policyGeneration: policy.generation } : {}),
    valid: true,
    stageCount: sandboxes.length,
    findings,
    ...(readPaths ? { readPaths } : {}),
    resolvedSandboxes: sandboxes,
    conditions: buildConditions(input.previous?.conditions, [decided], input.now, input.generation),
  };
}
