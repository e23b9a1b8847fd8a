// What `leviath validate` and the Agent's status report about a blueprint under an admin policy: the
// read-path findings of upstream's `lev validate` (same codes and texts), plus the sandbox and permission
// findings an operator needs to see before a Run does.
import type { AgentSpec } from "../api/agent.ts";
import { computeEffectiveStages } from "../api/agent.ts";
import type { SandboxBlock } from "../api/common.ts";
import type { LeviathPolicySpec } from "../api/policy.ts";
import { lookupPermission, resolveToolPermission, type PermissionMap } from "./permissions.ts";
import { buildReadPathReport, computeReadPathFindings, type FindingSeverity } from "./read-paths/index.ts";

/** One finding, in the `--json` shape of upstream's `lev validate`. */
export interface Finding {
  severity: FindingSeverity;
  code: string;
  /** The stage it concerns, or null for the blueprint as a whole. */
  stage: string | null;
  message: string;
  fix: string | null;
}

/** Everything the findings depend on; `policy` null means no admin config could be loaded (offline). */
export interface AgentFindingsInput {
  spec: AgentSpec;
  /** The name messages print (upstream's `[agent] name`). */
  name: string;
  /** `namespace/name`, the key of per-agent grants. */
  key: string;
  policy: LeviathPolicySpec | null;
  workdir: string;
  home: string | undefined;
}

/** The counts behind "granted over declared", when a report could be built. */
export interface ReadPathCounts {
  declared: number;
  granted: number;
}

const RANK: Record<FindingSeverity, number> = { error: 0, warning: 1, note: 2 };

function sandboxFindings(spec: AgentSpec): Finding[] {
  const out: Finding[] = [];
  const engine = (block: SandboxBlock | undefined, stage: string | null, table: string) => {
    if (block?.engine === undefined) return;
    out.push({
      severity: "warning", code: "sandbox-engine-ignored", stage,
      message: `${table} engine '${block.engine}' is ignored: a blueprint never chooses the engine; the admin's policy maps sandbox kinds to runtime classes`,
      fix: `remove engine from ${table}`,
    });
  };
  engine(spec.sandbox, null, "[sandbox]");
  const agentKind = spec.sandbox?.kind ?? "none";
  for (const stage of spec.stages) {
    const table = `[stages.${stage.name}.sandbox]`;
    engine(stage.sandbox, stage.name, table);
    if (stage.sandbox && stage.sandbox.kind === undefined && agentKind !== "none") {
      out.push({
        severity: "warning", code: "sandbox-stage-opts-out", stage: stage.name,
        message: `${table} has no kind, so this stage runs without a sandbox unless the admin's floor applies (a stage block replaces the agent's whole)`,
        fix: `add kind = "${agentKind}" to ${table}, and repeat the image and network it needs`,
      });
    }
  }
  return out;
}

function permissionFindings(spec: AgentSpec, key: string, policy: LeviathPolicySpec): Finding[] {
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
        out.push({
          severity: "note", code: "tool-permission-clamped", stage,
          message: `blueprint asks ${tool} = "${asked}"; the admin's policy keeps it at "${got}" (a blueprint can tighten, never loosen)`,
          fix: lookupPermission(policy.toolPermissions, tool) === undefined ? null : `the ceiling is toolPermissions.${tool} in the LeviathPolicy`,
        });
      }
    }
  };
  check(spec.toolPermissions, null);
  for (const stage of spec.stages) check(stage.toolPermissions, stage.name);
  return out;
}

function modelFindings(spec: AgentSpec): Finding[] {
  return spec.stages
    .filter((s) => s.runtime?.["model"] === undefined)
    .map((s) => ({
      severity: "warning" as const, code: "stage-no-model", stage: s.name,
      message: `stage '${s.name}' names no model and falls back to the built-in default`,
      fix: `add model = { models = [{ provider = "...", model = "..." }] } to [stages.${s.name}]`,
    }));
}

/** The read-path counts recorded on status (omitted upstream when nothing is declared or grants are invalid). */
export function computeReadPathCounts(input: AgentFindingsInput): ReadPathCounts | null {
  if (input.policy === null) return null;
  const report = buildReadPathReport(reportInput(input, input.policy));
  return report?.ok ? { declared: report.report.declared, granted: report.report.granted } : null;
}

function reportInput(input: AgentFindingsInput, policy: LeviathPolicySpec) {
  return {
    agentName: input.name,
    declared: input.spec.readPaths?.allow ?? [],
    granted: [...policy.readPaths.global, ...(policy.readPaths.perAgent[input.key] ?? [])],
    allowBlueprintReadPaths: policy.readPaths.allowBlueprintReadPaths,
    workdir: input.workdir,
    home: input.home,
  };
}

/** Every finding for one blueprint, worst first (a stable sort, as upstream). */
export function computeAgentFindings(input: AgentFindingsInput): Finding[] {
  const declared = input.spec.readPaths?.allow ?? [];
  const report = input.policy === null ? "offline" : buildReadPathReport(reportInput(input, input.policy));
  const readPaths: Finding[] = report === null ? [] : computeReadPathFindings({ declared, report }).map((f) => ({ ...f }));
  const findings = [
    ...readPaths,
    ...sandboxFindings(input.spec),
    ...(input.policy ? permissionFindings(input.spec, input.key, input.policy) : []),
    ...modelFindings(input.spec),
  ];
  return findings.map((f, i) => [f, i] as const).sort((a, b) => RANK[a[0].severity] - RANK[b[0].severity] || a[1] - b[1]).map(([f]) => f);
}

/** "N stages, version V" as upstream's validate prints it. */
export function describeBlueprint(spec: AgentSpec): string {
  const n = computeEffectiveStages(spec).length;
  return `${n} ${n === 1 ? "stage" : "stages"}, version ${spec.agent.version ?? "0.1.0"}`;
}
