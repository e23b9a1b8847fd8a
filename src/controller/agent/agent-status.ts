import { AgentSpecSchema, type AgentSpec } from "../../api/agent.ts";
import { CLUSTER_ADVICE, FINDING_CODE, type Finding } from "../../api/findings.ts";
import { CONDITION, REASON, type AgentStatus } from "../../api/status.ts";
import { computeRuntimeCeilingFinding } from "../../policy/ceilings.ts";
import { resolveStageSandboxes } from "../../policy/sandbox-resolve.ts";
import { computeAgentFindings, computeReadPathCounts } from "../../policy/agent-findings.ts";
import { computeAgentGrants } from "../../policy/run-policy-merge.ts";
import { VALIDATION_CONTEXT } from "../../policy/read-paths/index.ts";
import { buildConditions, formatFieldPath, type ConditionDecision } from "../conditions.ts";
import { computeEffectivePolicy, type PolicyState } from "../leviath-policy/policy-state.ts";
import { decideValidReadiness } from "../readiness.ts";
import { buildAgentKey } from "../../api/common.ts";

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

function invalid(input: AgentStatusInput, findings: Finding[], reason: string): AgentStatus {
  const decided: ConditionDecision = { type: CONDITION.valid, status: "False", reason, message: findings.map((f) => f.message).join("; ") };
  return {
    observedGeneration: input.generation,
    valid: false,
    findings,
    conditions: buildConditions(input.previous?.conditions, [decided, ...decideValidReadiness(decided)], input.now, input.generation),
  };
}

/** The spec parsed at the boundary and named as its Agent is; otherwise the findings that say why not. */
function parseAgentSpec(input: AgentStatusInput): { spec: AgentSpec } | { findings: Finding[] } {
  const parsed = AgentSpecSchema.safeParse(input.spec ?? {});
  if (!parsed.success) {
    return { findings: parsed.error.issues.map((i): Finding => ({ severity: "error", code: FINDING_CODE.blueprintInvalid, message: `${formatFieldPath("spec", i.path)}: ${i.message}` })) };
  }
  const spec = parsed.data;
  if (spec.agent.name !== undefined && spec.agent.name !== input.name) {
    const message = `spec.agent.name: '${spec.agent.name}' differs from metadata.name '${input.name}'; an Agent is identified by namespace/name`;
    return { findings: [{ severity: "error", code: FINDING_CODE.blueprintInvalid, message }] };
  }
  return { spec };
}

/** One stage's resolved sandbox as the status reports it. */
function describeStageSandbox({ stage, sandbox }: ReturnType<typeof resolveStageSandboxes>[number]): NonNullable<AgentStatus["resolvedSandboxes"]>[number] {
  return {
    stage,
    kind: sandbox.kind,
    ...(sandbox.image !== undefined ? { image: sandbox.image } : {}),
    network: sandbox.network,
    mounts: sandbox.mounts,
    ...(sandbox.runtimeClassName !== undefined ? { runtimeClassName: sandbox.runtimeClassName } : {}),
    onUnavailable: sandbox.onUnavailable,
    source: sandbox.source,
  };
}

/**
 * The Agent status: the spec parsed at the boundary (a schema violation is a finding naming the field), then
 * validated against the effective policy: findings, read paths granted/declared, and each stage's sandbox.
 */
export function computeAgentStatus(input: AgentStatusInput): AgentStatus {
  const parsed = parseAgentSpec(input);
  if ("findings" in parsed) return invalid(input, parsed.findings, REASON.invalidSpec);
  const { spec } = parsed;
  const policy = computeEffectivePolicy(input.policy);
  if (!policy) {
    const message = input.policy.kind === "invalid" ? `the LeviathPolicy is invalid (${input.policy.message}) and no earlier version was valid` : "no policy";
    const decided: ConditionDecision = { type: CONDITION.valid, status: "Unknown", reason: REASON.invalidPolicy, message };
    return { observedGeneration: input.generation, conditions: buildConditions(input.previous?.conditions, [decided, ...decideValidReadiness(decided)], input.now, input.generation) };
  }
  const key = buildAgentKey(input.namespace, input.name);
  const findings = computeAgentFindings({ spec, name: input.name, key, policy: policy.spec, ...VALIDATION_CONTEXT, advice: CLUSTER_ADVICE });
  const readPaths = computeReadPathCounts({
    agentName: key, declared: spec.readPaths?.allow ?? [], granted: computeAgentGrants(policy.spec, key), allowBlueprintReadPaths: policy.spec.readPaths.allowBlueprintReadPaths,
  });
  const refused = computeRuntimeCeilingFinding(policy.spec, spec, input.defaultRuntimeImage);
  if (refused) return invalid(input, [refused, ...findings], REASON.refusedByPolicy);
  const errors = findings.filter((f) => f.severity === "error");
  if (errors.length > 0) return invalid(input, findings, REASON.invalidSpec);
  const sandboxes = resolveStageSandboxes(spec, policy.spec.sandbox).map(describeStageSandbox);
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
    conditions: buildConditions(input.previous?.conditions, [decided, ...decideValidReadiness(decided)], input.now, input.generation),
  };
}
