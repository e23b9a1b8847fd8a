// The `unknown-tool-name` findings: a name in a blueprint's or the admin's toolPermissions, or in a stage's
// availableTools, that names no tool, with the nearest known name and the fix in the syntax of the file given
// (an Agent or LeviathPolicy field, or the agent.leviath / config.toml table). Pure.
import type { AgentSpec } from "../api/agent.ts";
import { FINDING_CODE, type Finding, type FindingAdvice } from "../api/findings.ts";
import type { LeviathPolicySpec } from "../api/leviath-policy.ts";
import { findNearestToolName, isKnownToolName } from "./tool-names.ts";

/** One place a tool name is written: the name, how the reader finds a name there, the stage it belongs to. */
interface NamedAt {
  name: string;
  /** `spec.toolPermissions.shel`, `[stages.survey] available_tools[1]`, ... for a given name. */
  where: (name: string) => string;
  stage?: string | undefined;
}

function unknownName(at: NamedAt, effect: string): Finding[] {
  if (isKnownToolName(at.name)) return [];
  const nearest = findNearestToolName(at.name);
  return [{
    severity: "warning", code: FINDING_CODE.unknownToolName,
    message: `${at.where(at.name)}: no tool is named '${at.name}'${nearest ? ` (did you mean '${nearest}'?)` : ""}; ${effect}`,
    fix: nearest ? `write ${at.where(nearest)} instead` : "use a built-in tool's name (docs/taint-and-permissions.md) or an MCP tool's '<server>__<tool>'",
    ...(at.stage !== undefined ? { stage: at.stage } : {}),
  }];
}

const GOVERNS_NOTHING = "the entry governs nothing, and the tool it was meant for keeps its default permission";
const NEVER_OFFERED = "the stage offers no such tool";

function permissionMap(map: Readonly<Record<string, unknown>> | undefined, where: (tool: string) => string, stage?: string): Finding[] {
  return Object.keys(map ?? {}).flatMap((name) => unknownName({ name, where, stage }, GOVERNS_NOTHING));
}

/** Unknown tool names in an Agent's (or agent.leviath's) toolPermissions and each stage's toolPermissions and availableTools. */
export function computeBlueprintToolNameFindings(spec: AgentSpec, advice: FindingAdvice): Finding[] {
  const agent = advice.blueprint === "Agent";
  const out = permissionMap(spec.toolPermissions, (t) => (agent ? `spec.toolPermissions.${t}` : `[tool_permissions] ${t}`));
  spec.stages.forEach((stage, i) => {
    out.push(...permissionMap(stage.toolPermissions, (t) => (agent ? `spec.stages[${i}].toolPermissions.${t}` : `[stages.${stage.name}.tool_permissions] ${t}`), stage.name));
    (stage.availableTools ?? []).forEach((name, j) => {
      const where = (n: string) => (agent ? `spec.stages[${i}].availableTools[${j}] '${n}'` : `[stages.${stage.name}] available_tools[${j}] "${n}"`);
      out.push(...unknownName({ name, where, stage: stage.name }, NEVER_OFFERED));
    });
  });
  return out;
}

/** Unknown tool names in the admin's toolPermissions and agentToolPermissions (a LeviathPolicy or config.toml). */
export function computePolicyToolNameFindings(policy: Pick<LeviathPolicySpec, "toolPermissions" | "agentToolPermissions">, advice: FindingAdvice): Finding[] {
  const crd = advice.policy === "LeviathPolicy";
  const out = permissionMap(policy.toolPermissions, (t) => (crd ? `spec.toolPermissions.${t} of the LeviathPolicy` : `[tool_permissions] ${t} in your config.toml`));
  for (const [key, map] of Object.entries(policy.agentToolPermissions)) {
    out.push(...permissionMap(map, (t) => (crd ? `spec.agentToolPermissions["${key}"].${t} of the LeviathPolicy` : `[agent_tool_permissions."${key}"] ${t} in your config.toml`)));
  }
  return out;
}
