// The smallest change that would let a refused or asked call through, as a snippet in the syntax the user edits:
// the LeviathPolicy or the Agent (YAML), or upstream's config.toml, policy.toml and agent.leviath (TOML). Pure.

/** Which syntax the snippets are written in. */
export type Syntax = "yaml" | "toml";

/** One edit: which object or file it goes in, and the lines to merge into it. */
export interface Change {
  where: string;
  lines: string[];
}

const q = JSON.stringify;

/** A per-agent tool permission in the admin's policy (the narrowest ceiling: this Agent only). */
export function buildAgentPermissionChange(syntax: Syntax, agentKey: string, tool: string, permission: string): Change {
  if (syntax === "toml") return { where: "config.toml", lines: [`[agent_tool_permissions.${q(agentKey)}]`, `${tool} = ${q(permission)}`] };
  return { where: "the LeviathPolicy (kubectl edit leviathpolicy cluster)", lines: ["spec:", "  agentToolPermissions:", `    ${q(agentKey)}:`, `      ${tool}: ${permission}`] };
}

/** A blueprint tool permission, agent-wide or of one stage. */
export function buildBlueprintPermissionChange(syntax: Syntax, tool: string, permission: string, stage?: { name: string; index: number }): Change {
  if (syntax === "toml") {
    return { where: "agent.leviath", lines: [stage ? `[stages.${stage.name}.tool_permissions]` : "[tool_permissions]", `${tool} = ${q(permission)}`] };
  }
  const lines = stage
    ? ["spec:", "  stages:", `    - name: ${stage.name}    # spec.stages[${stage.index}]`, "      toolPermissions:", `        ${tool}: ${permission}`]
    : ["spec:", "  toolPermissions:", `    ${tool}: ${permission}`];
  return { where: "the Agent (kubectl edit agent)", lines };
}

/** A stage's availableTools with the tool added. */
export function buildAvailableToolsChange(syntax: Syntax, stage: { name: string; index: number }, tools: readonly string[]): Change {
  if (syntax === "toml") return { where: "agent.leviath", lines: [`[stages.${stage.name}]`, `available_tools = [${tools.map((t) => q(t)).join(", ")}]`] };
  return { where: "the Agent (kubectl edit agent)", lines: ["spec:", "  stages:", `    - name: ${stage.name}    # spec.stages[${stage.index}]`, `      availableTools: [${tools.join(", ")}]`] };
}

/** A taint allowlist rule letting data up to `level` go to `target` (any target when none) through `tool`. */
export function buildAllowlistChange(syntax: Syntax, tool: string, level: string, target: string | undefined): Change {
  if (syntax === "toml") {
    return { where: "policy.toml", lines: ["[[allowlist]]", `tool = ${q(tool)}`, ...(target ? [`to = [${q(target)}]`] : []), `max_sensitivity = ${q(level)}`] };
  }
  const to = target ? `, to: [${q(target)}]` : "";
  return { where: "the LeviathPolicy (kubectl edit leviathpolicy cluster)", lines: ["spec:", "  taint:", "    allowlist:", `      - {tool: ${tool}${to}, maxSensitivity: ${level}}`] };
}

/** A read path declared by the blueprint. */
export function buildDeclareChange(syntax: Syntax, paths: readonly string[]): Change {
  if (syntax === "toml") return { where: "agent.leviath", lines: ["[read_paths]", `allow = [${paths.map((p) => q(p)).join(", ")}]   # added to what it declares`] };
  return { where: "the Agent (kubectl edit agent)", lines: ["spec:", "  readPaths:", "    allow:", ...paths.map((p) => `      - ${p}`)] };
}

/** A read-path grant to one Agent, and (YAML) the volume that puts the files there in the cluster. */
export function buildGrantChange(syntax: Syntax, agentKey: string, paths: readonly string[]): Change {
  if (syntax === "toml") return { where: "config.toml", lines: [`[agent_read_paths.${q(agentKey)}]`, `allow = [${paths.map((p) => q(p)).join(", ")}]`] };
  return {
    where: "the LeviathPolicy (kubectl edit leviathpolicy cluster)",
    lines: ["spec:", "  readPaths:", "    perAgent:", `      ${q(agentKey)}:`, ...paths.map((p) => `        - ${p}`),
      "    volumes:              # unless one already mounts something there", ...paths.map((p) => `      - {path: ${p}, volume: {configMap: {name: <name>}}}`)],
  };
}
