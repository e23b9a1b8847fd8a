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

/** Where an Agent's change goes: the command that opens exactly that Agent (`agentKey` is `namespace/name`). */
function agentWhere(agentKey: string): string {
  const slash = agentKey.indexOf("/");
  const [ns, name] = slash < 0 ? [undefined, agentKey] : [agentKey.slice(0, slash), agentKey.slice(slash + 1)];
  return `the Agent (kubectl edit agent ${name}${ns ? ` -n ${ns}` : ""})`;
}

/**
 * Paths whose grant hands the model what the node or its users keep to themselves: accounts, keys, kernel and
 * process state, service-account tokens. A grant there is a decision to make knowingly, so the snippet says so.
 */
const SYSTEM_PREFIXES = ["/etc", "/proc", "/sys", "/dev", "/root", "/run", "/var/run", "/var/lib", "/boot", "/home"];
const SECRET_NAMES = /(^|\/)(\.ssh|\.kube|\.aws|\.gnupg|\.config\/gcloud|\.docker|shadow|passwd|gshadow|sudoers|id_[a-z0-9]+|[^/]*\.pem|[^/]*\.key|token|credentials?)(\/|$)/i;

/** Whether granting `path` would open system or secret files (so the snippet carries a caution). */
export function isSensitiveGrant(path: string): boolean {
  const plain = path.replace(/^(glob|regex):/, "");
  if (plain === "/" || plain === "/*" || plain === "/**") return true;
  return SYSTEM_PREFIXES.some((p) => plain === p || plain.startsWith(`${p}/`)) || SECRET_NAMES.test(plain);
}

function cautionLines(syntax: Syntax, paths: readonly string[]): string[] {
  const risky = paths.filter(isSensitiveGrant);
  if (risky.length === 0) return [];
  return [`# caution: ${risky.join(", ")} holds system or secret files: the model would read them and may send what it reads; grant a narrower path if the task allows`];
}

/** A per-agent tool permission in the admin's policy (the narrowest ceiling: this Agent only). */
export function buildAgentPermissionChange(syntax: Syntax, agentKey: string, tool: string, permission: string): Change {
  if (syntax === "toml") return { where: "config.toml", lines: [`[agent_tool_permissions.${q(agentKey)}]`, `${tool} = ${q(permission)}`] };
  return { where: "the LeviathPolicy (kubectl edit leviathpolicy cluster)", lines: ["spec:", "  agentToolPermissions:", `    ${q(agentKey)}:`, `      ${tool}: ${permission}`] };
}

/** A blueprint tool permission, agent-wide or of one stage. */
export function buildBlueprintPermissionChange(syntax: Syntax, agent: { key: string; stage?: { name: string; index: number } | undefined }, tool: string, permission: string): Change {
  const { stage } = agent;
  if (syntax === "toml") {
    return { where: "agent.leviath", lines: [stage ? `[stages.${stage.name}.tool_permissions]` : "[tool_permissions]", `${tool} = ${q(permission)}`] };
  }
  const lines = stage
    ? ["spec:", "  stages:", `    - name: ${stage.name}    # spec.stages[${stage.index}]`, "      toolPermissions:", `        ${tool}: ${permission}`]
    : ["spec:", "  toolPermissions:", `    ${tool}: ${permission}`];
  return { where: agentWhere(agent.key), lines };
}

/** A stage's availableTools with the tool added. */
export function buildAvailableToolsChange(syntax: Syntax, agentKey: string, stage: { name: string; index: number }, tools: readonly string[]): Change {
  if (syntax === "toml") return { where: "agent.leviath", lines: [`[stages.${stage.name}]`, `available_tools = [${tools.map((t) => q(t)).join(", ")}]`] };
  return { where: agentWhere(agentKey), lines: ["spec:", "  stages:", `    - name: ${stage.name}    # spec.stages[${stage.index}]`, `      availableTools: [${tools.join(", ")}]`] };
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
export function buildDeclareChange(syntax: Syntax, agentKey: string, paths: readonly string[]): Change {
  if (syntax === "toml") return { where: "agent.leviath", lines: ["[read_paths]", `allow = [${paths.map((p) => q(p)).join(", ")}]   # added to what it declares`] };
  return { where: agentWhere(agentKey), lines: ["spec:", "  readPaths:", "    allow:", ...paths.map((p) => `      - ${p}`)] };
}

/** A read-path grant to one Agent, and (YAML) the volume that puts the files there in the cluster. */
export function buildGrantChange(syntax: Syntax, agentKey: string, paths: readonly string[]): Change {
  if (syntax === "toml") return { where: "config.toml", lines: [...cautionLines(syntax, paths), `[agent_read_paths.${q(agentKey)}]`, `allow = [${paths.map((p) => q(p)).join(", ")}]`] };
  return {
    where: "the LeviathPolicy (kubectl edit leviathpolicy cluster)",
    lines: [...cautionLines(syntax, paths), "spec:", "  readPaths:", "    perAgent:", `      ${q(agentKey)}:`, ...paths.map((p) => `        - ${p}`),
      "    volumes:              # unless one already mounts something there", ...paths.map((p) => `      - {path: ${p}, volume: {configMap: {name: <name>}}}`)],
  };
}

/**
 * A rule of the untrusted-context allowlist (issue 40), or (`taint: true`) of the taint allowlist for a target checked
 * at any taint. Upstream's files have no integrity section: the change is to the LeviathPolicy in either syntax.
 */
export function buildIntegrityAllowlistChange(tool: string, target: string | undefined, list: "integrity" | "taint"): Change {
  const to = target ? `, to: [${q(target)}]` : "";
  return { where: "the LeviathPolicy (kubectl edit leviathpolicy cluster)", lines: ["spec:", `  ${list}:`, "    allowlist:", `      - {tool: ${tool}${to}}`] };
}
