// What `leviath validate` and the Agent's status report about a blueprint under an admin policy: the
// read-path findings of upstream's `lev validate` (same codes and texts), plus the sandbox and permission
// findings an operator needs to see before a Run does.
import type { AgentSpec } from "../api/agent.ts";
import { computeEffectiveStages } from "../api/agent.ts";
import { FINDING_CODE, type Finding, type FindingAdvice, type FindingSeverity } from "../api/findings.ts";
import type { LeviathPolicySpec } from "../api/leviath-policy.ts";
import type { ReadPathCounts } from "../api/status.ts";
import { lookupPermission, resolveToolPermission, type PermissionMap } from "./permissions.ts";
import { buildReadPathReport, computeReadPathFindings, validateEntrySyntax, VALIDATION_CONTEXT } from "./read-paths/index.ts";
import { computeAgentGrants } from "./run-policy-merge.ts";
import { computeSandboxFindings } from "./sandbox-findings.ts";
import { computeUnbackedGrantFindings, listPlacedGrants } from "./grant-volumes.ts";
import { computeBlueprintToolNameFindings } from "./tool-name-findings.ts";

/** Everything the findings depend on; `policy` null means no admin config could be loaded (offline). */
export interface AgentFindingsInput {
  spec: AgentSpec;
  /** The name messages and config.toml advice print (upstream's `[agent] name`, or `metadata.name`). */
  name: string;
  /** `namespace/name`, the key of per-agent grants. */
  key: string;
  policy: LeviathPolicySpec | null;
  /** Where relative and `~` entries resolve (the operator, which has no workdir, uses VALIDATION_CONTEXT). */
  workdir: string;
  home: string | undefined;
  /** The files or resources the advice points at. */
  advice: FindingAdvice;
}

const RANK: Record<FindingSeverity, number> = { error: 0, warning: 1, note: 2 };

/** What the read-path counts are computed from: the declared and granted lists, as an Agent has them or a Run pinned them. */
export interface ReadPathCountsInput {
  agentName: string;
  declared: readonly string[];
  granted: readonly string[];
  allowBlueprintReadPaths: boolean;
  workdir?: string;
  home?: string | undefined;
}

/** Read paths granted over declared (`lev ps`'s `g/d`); undefined when nothing is declared, 0 granted when the grants do not compile. */
export function computeReadPathCounts(input: ReadPathCountsInput): ReadPathCounts | undefined {
  if (input.declared.length === 0) return undefined;
  const report = buildReadPathReport({ ...VALIDATION_CONTEXT, ...input, ...(input.workdir ? { workdir: input.workdir } : {}) });
  const granted = report?.ok ? report.report.granted : 0;
  return { declared: input.declared.length, granted, display: `${granted}/${input.declared.length}` };
}

function permissionFindings(spec: AgentSpec, key: string, policy: LeviathPolicySpec, advice: FindingAdvice): Finding[] {
  const out: Finding[] = [];
  const check = (map: PermissionMap | undefined, stage: string | null) => {
    for (const [tool, asked] of Object.entries(map ?? {})) {
      const got = resolveToolPermission({
        tool,
        userPermissions: policy.toolPermissions,
        agentUserPermissions: policy.agentToolPermissions[key] ?? {},
        ...(stage === null ? { blueprintAgent: map } : { blueprintStage: map, blueprintAgent: spec.toolPermissions ?? {} }),
        allowBlueprintPermissions: policy.security.allowBlueprintPermissions,
      }).permission;
      if (got !== asked) {
        const ceiling = advice.policy === "LeviathPolicy" ? `spec.toolPermissions.${tool} of the LeviathPolicy` : `[tool_permissions] ${tool} in your config.toml`;
        out.push({
          severity: "note", code: FINDING_CODE.toolPermissionClamped,
          message: `blueprint asks ${tool} = "${asked}"; the admin's policy keeps it at "${got}" (a blueprint can tighten, never loosen)`,
          ...(lookupPermission(policy.toolPermissions, tool) !== undefined ? { fix: `the ceiling is ${ceiling}` } : {}),
          ...(stage !== null ? { stage } : {}),
        });
      }
    }
  };
  check(spec.toolPermissions, null);
  for (const stage of spec.stages) check(stage.toolPermissions, stage.name);
  return out;
}

function modelFindings(spec: AgentSpec, advice: FindingAdvice): Finding[] {
  return spec.stages.flatMap((s, i): Finding[] => s.runtime?.["model"] !== undefined ? [] : [{
    severity: "warning", code: FINDING_CODE.stageNoModel, stage: s.name,
    message: `stage '${s.name}' names no model and falls back to the built-in default`,
    fix: advice.blueprint === "Agent"
      ? `add spec.stages[${i}].runtime.model: {models: [{provider: ..., model: ...}]}`
      : `add model = { models = [{ provider = "...", model = "..." }] } to [stages.${s.name}]`,
  }]);
}

/** Entries of `[read_paths]` that do not compile: the blueprint is refused whole, as upstream refuses it. */
function entrySyntaxFindings(declared: readonly string[], advice: FindingAdvice): Finding[] {
  return declared.flatMap((raw, i): Finding[] => {
    const checked = validateEntrySyntax(raw);
    const where = advice.blueprint === "Agent" ? `spec.readPaths.allow[${i}]` : `[read_paths] allow[${i}]`;
    return checked.ok ? [] : [{ severity: "error", code: FINDING_CODE.blueprintInvalid, message: `${where}: ${checked.error}` }];
  });
}

/** Every finding for one blueprint, worst first (a stable sort, as upstream); an entry that does not compile is the only finding. */
export function computeAgentFindings(input: AgentFindingsInput): Finding[] {
  const declared = input.spec.readPaths?.allow ?? [];
  const syntax = entrySyntaxFindings(declared, input.advice);
  if (syntax.length > 0) return syntax;
  const policy = input.policy;
  const report = policy === null ? "offline" : buildReadPathReport({
    agentName: input.name, declared, granted: computeAgentGrants(policy, input.key),
    allowBlueprintReadPaths: policy.readPaths.allowBlueprintReadPaths, workdir: input.workdir, home: input.home,
  });
  const readPaths = report === null ? [] : computeReadPathFindings({ declared, report, advice: input.advice.policy, agentKey: input.key });
  const findings = [
    ...readPaths,
    ...computeSandboxFindings(input.spec, policy === null ? null : policy.sandbox, input.advice),
    ...(policy ? permissionFindings(input.spec, input.key, policy, input.advice) : []),
    ...computeBlueprintToolNameFindings(input.spec, input.advice),
    // Only a cluster mounts volumes: a config.toml's grants name the machine's own paths.
    ...(policy && input.advice.policy === "LeviathPolicy" ? computeUnbackedGrantFindings(listPlacedGrants(policy.readPaths, input.key), policy.readPaths, declared) : []),
    ...modelFindings(input.spec, input.advice),
  ];
  return findings.map((f, i) => [f, i] as const).sort((a, b) => RANK[a[0].severity] - RANK[b[0].severity] || a[1] - b[1]).map(([f]) => f);
}

/** "N stages, version V" as upstream's validate prints it. */
export function describeBlueprint(spec: AgentSpec): string {
  const n = computeEffectiveStages(spec).length;
  return `${n} ${n === 1 ? "stage" : "stages"}, version ${spec.agent.version ?? "0.1.0"}`;
}
