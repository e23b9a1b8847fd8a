import { computeEffectiveStages, type AgentSpec } from "../api/agent.ts";
import type { LeviathPolicySpec } from "../api/leviath-policy.ts";
import type { RunMode, RunPolicy } from "../api/run-policy.ts";
import { resolveSandbox, resolveTaintTracking } from "./sandbox-resolve.ts";
import { parseTransitions } from "./stage-transitions.ts";

/** Who the agent is, for grants (`key`) and for messages (`name`). */
export interface AgentIdentity {
  key: string;
  name: string;
}

/** The run's own choices. */
export interface RunLaunch {
  mode: RunMode;
  allow?: string[];
  agentGeneration?: number;
  policyGeneration?: number;
}

/** The grant list that applies to one Agent: global plus its own, keyed by `namespace/name`. */
export function computeAgentGrants(policy: LeviathPolicySpec, key: string): string[] {
  return [...policy.readPaths.global, ...(policy.readPaths.perAgent[key] ?? [])];
}

/** A stage's edges as the runtime follows them (the runtime reports what it ignores; the sidecar needs only the edges). */
function computeStageTransitions(raw: unknown, names: ReadonlySet<string>): { transitions?: RunPolicy["stages"][number]["transitions"] } {
  const edges = parseTransitions(raw, "transitions", names, []);
  return edges === undefined ? {} : { transitions: edges.map((e) => ({ to: e.to, condition: e.condition, hint: e.hint })) };
}

/** The admin's MCP servers, and web_search's backend among them when the policy names one. */
function computeMcpFields(policy: LeviathPolicySpec): Pick<RunPolicy, "mcpServers" | "webSearch"> {
  return { mcpServers: policy.mcpServers, ...(policy.webSearch === undefined ? {} : { webSearch: policy.webSearch }) };
}

/** The limits a Run carries: the prompt's timeout and hold on /mcp, the shell's timeout. */
function computeRunLimits(limits: LeviathPolicySpec["limits"]): RunPolicy["limits"] {
  const { interactionTimeoutSeconds, shellTimeoutSeconds, promptHoldSeconds } = limits;
  return { interactionTimeoutSeconds, shellTimeoutSeconds, ...(promptHoldSeconds === undefined ? {} : { promptHoldSeconds }) };
}

/**
 * Resolve what one run enforces: the blueprint tightened by the admin's policy. Grants are looked up by the
 * Agent's `namespace/name` only; read paths stay declared-and-granted lists the sidecar compiles itself.
 */
export function buildRunPolicy(spec: AgentSpec, id: AgentIdentity, policy: LeviathPolicySpec, launch: RunLaunch): RunPolicy {
  const effective = computeEffectiveStages(spec);
  const names = new Set(effective.map((s) => s.name));
  const stages = effective.map((s) => ({
    name: s.name,
    ...(s.availableTools ? { availableTools: s.availableTools } : {}),
    ...(s.availableConnectors ? { availableConnectors: s.availableConnectors } : {}),
    ...(s.requiredTools ? { requiredTools: s.requiredTools } : {}),
    ...(s.toolPermissions ? { toolPermissions: s.toolPermissions } : {}),
    sandbox: resolveSandbox(policy.sandbox, spec.sandbox, s.sandbox),
    ...computeStageTransitions(s.runtime?.["transitions"], names),
  }));
  const first = stages[0]?.name ?? "main";
  return {
    agent: { key: id.key, name: id.name, ...(spec.agent.version ? { version: spec.agent.version } : {}) },
    stages,
    entryStage: spec.agent.entryStage ?? first,
    launch: { mode: launch.mode, allow: launch.allow ?? [] },
    toolPermissions: {
      blueprint: spec.toolPermissions ?? {},
      ceiling: { ...policy.toolPermissions, ...(policy.agentToolPermissions[id.key] ?? {}) },
      allowBlueprintPermissions: policy.security.allowBlueprintPermissions,
    },
    readPaths: {
      declared: spec.readPaths?.allow ?? [],
      granted: computeAgentGrants(policy, id.key),
      allowBlueprintReadPaths: policy.readPaths.allowBlueprintReadPaths,
    },
    taint: {
      tracking: resolveTaintTracking(spec, policy.security.taintTracking),
      allowlist: policy.taint.allowlist,
      rules: [...policy.taint.rules].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      toolOverrides: policy.taint.toolOverrides,
    },
    integrity: policy.integrity,
    ...computeMcpFields(policy),
    seedCommands: {
      allowed: policy.security.allowSeedCommands,
      // The blueprint's own [safe_commands] count only where the admin honours them, as upstream.
      safeShell: [...policy.safeCommands.shell, ...(policy.security.allowBlueprintSafeCommands ? spec.safeCommands?.shell ?? [] : [])],
    },
    limits: computeRunLimits(policy.limits),
    outbound: { allowLocalNetwork: policy.security.allowLocalNetwork, timeoutSeconds: policy.limits.httpTimeoutSeconds },
    pinned: {
      ...(launch.agentGeneration !== undefined ? { agentGeneration: launch.agentGeneration } : {}),
      ...(launch.policyGeneration !== undefined ? { policyGeneration: launch.policyGeneration } : {}),
    },
  };
}
