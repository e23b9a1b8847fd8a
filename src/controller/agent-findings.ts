import type { AgentSpec } from "../api/agent.ts";
import type { LeviathPolicySpec } from "../api/policy.ts";
import type { Finding, ReadPathCounts } from "../api/status.ts";
import { computeAgentFindings as computeValidateFindings } from "../policy/agent-findings.ts";
import { computeAgentGrants } from "../policy/run-policy.ts";
import { buildReadPathReport, validateEntrySyntax, VALIDATION_CONTEXT } from "../policy/read-paths/index.ts";

/** The code of a finding that makes the blueprint unusable (a parse failure upstream). */
export const INVALID_BLUEPRINT = "invalid-blueprint";

/**
 * The `lev validate` findings of a parsed Agent against a policy, and its read-path counts: a declared entry that
 * does not compile is an error naming the entry (upstream refuses the whole blueprint); otherwise the same
 * findings as `leviath validate` (the policy core's `computeAgentFindings`), with grants looked up by
 * `namespace/name` and entries compiled against the fixed validation context (the operator has no workdir).
 */
export function computeAgentFindings(spec: AgentSpec, key: string, policy: LeviathPolicySpec): { findings: Finding[]; readPaths?: ReadPathCounts } {
  const declared = spec.readPaths?.allow ?? [];
  const syntax: Finding[] = [];
  declared.forEach((raw, i) => {
    const checked = validateEntrySyntax(raw);
    if (!checked.ok) syntax.push({ severity: "error", code: INVALID_BLUEPRINT, message: `spec.readPaths.allow[${i}]: ${checked.error}` });
  });
  if (syntax.length > 0) return { findings: syntax };
  const findings = computeValidateFindings({ spec, name: key, key, policy, ...VALIDATION_CONTEXT }).map((f): Finding => ({
    severity: f.severity, code: f.code, message: f.message,
    ...(f.fix !== null ? { fix: f.fix } : {}),
    ...(f.stage !== null ? { stage: f.stage } : {}),
  }));
  const readPaths = computeReadPathCounts(key, declared, computeAgentGrants(policy, key), policy.readPaths.allowBlueprintReadPaths);
  return { findings, ...(readPaths ? { readPaths } : {}) };
}

/** Read-path counts of a run's pinned lists (the `g/d` of lev ps), evaluated as the Agent's report does. */
export function computeReadPathCounts(key: string, declared: readonly string[], granted: readonly string[], allowBlueprintReadPaths: boolean): ReadPathCounts | undefined {
  if (declared.length === 0) return undefined;
  const report = buildReadPathReport({ ...VALIDATION_CONTEXT, agentName: key, declared, granted, allowBlueprintReadPaths });
  const g = report?.ok ? report.report.granted : 0;
  return { declared: declared.length, granted: g, display: `${g}/${declared.length}` };
}
