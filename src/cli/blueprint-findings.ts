// What `validate` and `import` both say about an upstream blueprint file beyond its spec: a name no Kubernetes
// Agent can carry, and script tools that do not run here. One wording for both commands.
import { ObjectNameSchema } from "../api/common.ts";
import type { LoadedAgent } from "../config/load.ts";
import { FINDING_CODE, type Finding } from "../api/findings.ts";

/** A Kubernetes name close to `name` (`Planner_Bot` → `planner-bot`), or undefined when none is left. */
export function suggestAgentName(name: string): string | undefined {
  const s = name.toLowerCase().replace(/[^a-z0-9.-]+/g, "-").replace(/^[-.]+|[-.]+$/g, "").slice(0, 253).replace(/[-.]+$/, "");
  return ObjectNameSchema.safeParse(s).success ? s : undefined;
}

/** Why `name` cannot be an Agent's `metadata.name`, with what to do; null when it can. */
export function checkAgentName(name: string): string | null {
  if (ObjectNameSchema.safeParse(name).success) return null;
  const suggestion = suggestAgentName(name);
  return `'${name}' is not a valid Kubernetes name (lower-case letters, digits, '-' and '.'); pass --name${suggestion ? ` ${suggestion}` : ""}`;
}

/** The script tools' message: which files, and that nothing runs them here. */
export function describeScriptTools(files: readonly string[]): string {
  return `ships Rhai script tools (${files.join(", ")}) that do not run here: the operator has no Rhai engine, so these tools exist only where an MCP server or the runtime image provides them`;
}

/** The findings about the blueprint file itself, in the shape of `validate --json`. */
export function computeBlueprintFileFindings(agent: LoadedAgent): Finding[] {
  const out: Finding[] = [];
  const nameProblem = agent.format === "toml" ? checkAgentName(agent.name) : null;
  if (nameProblem !== null) {
    out.push({
      severity: "warning", code: FINDING_CODE.agentNameNotKubernetes,
      message: `[agent] name ${nameProblem.replace(/; pass --name.*$/, "")}: \`leviath import\` needs --name, and a cluster keys its grants by that name`,
      fix: `leviath import ${agent.file} --name ${suggestAgentName(agent.name) ?? "<name>"}`,
    });
  }
  if (agent.scriptTools.length > 0) {
    out.push({
      severity: "warning", code: FINDING_CODE.scriptToolsNotRun,
      message: describeScriptTools(agent.scriptTools),
      fix: "offer these tools from an MCP server in the LeviathPolicy, or from the runtime image",
    });
  }
  return out;
}
