import { DEFAULT_NAMESPACE } from "../api/constants.ts";
import { formatIssue } from "../config/load-error.ts";
import { FINDING_CODE, formatFindingJson, type Finding, type FindingAdvice } from "../api/findings.ts";
import { isYamlFile } from "../config/load.ts";
import { computeAgentFindings, describeBlueprint } from "../policy/agent-findings.ts";
import { renderFinding } from "../policy/read-paths/index.ts";
import { parseCommandArgs } from "./args.ts";
import { computeBlueprintFileFindings } from "./blueprint-findings.ts";
import { canonicalWorkdir, CliStop, homeOf, loadAgentFlag, loadPolicyFlags } from "./context.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";

/** `leviath validate --help`. */
export const VALIDATE_HELP = `Usage: leviath validate <agent> [options]

Check a blueprint, and how the admin's policy treats it, before anything runs: upstream's lev validate
findings (read-paths-declared, read-paths-not-granted, read-paths-grant-invalid, broad-read-path) with the
"granted over declared" counts and the stanza to add, plus sandbox and permission findings. Read-path
grants are compared as patterns here; 'leviath paths test' checks one real path.

  <agent>                  agent.leviath, a directory holding one, or an Agent YAML

Options:
      --config FILE        the admin's config.toml or a LeviathPolicy YAML (without it, no grants are known
                           and the declarations are reported as inert)
      --policy FILE        policy.toml (the taint allowlist and overrides)
  -n, --namespace NS       namespace of the agent for per-agent grants (default: ${DEFAULT_NAMESPACE}; an Agent
                           YAML's own namespace wins)
      --workdir DIR        the directory relative entries resolve against (default: the current directory)
      --deny-warnings      exit 1 when there are warnings
      --json               print the findings as a JSON array of {severity, code, stage, message, fix}
  -h, --help               show this help

'~' in entries is LEVIATH_HOME when set (even to an empty string), else your home directory.
Exit status: 0 valid (warnings allowed), 1 invalid (or warnings with --deny-warnings), 2 usage error.
`;

/**
 * Advice names the files given: the admin's side is the kind of `--config` (a LeviathPolicy YAML, or config.toml),
 * and without one follows the blueprint's format; the blueprint's side is its own format.
 */
function adviceFor(config: string | undefined, format: "toml" | "yaml"): FindingAdvice {
  const policyIsYaml = config !== undefined ? isYamlFile(config) : format === "yaml";
  return { policy: policyIsYaml ? "LeviathPolicy" : "config.toml", blueprint: format === "yaml" ? "Agent" : "agent.leviath" };
}

/** Run `leviath validate`. */
export function runValidate(argv: string[], io: CliIo): number {
  const { values, positionals } = parseCommandArgs(argv, {
    config: { type: "string" }, policy: { type: "string" }, namespace: { type: "string", short: "n" },
    workdir: { type: "string" }, "deny-warnings": { type: "boolean" }, json: { type: "boolean" },
  });
  if (values.help) {
    io.stdout(VALIDATE_HELP);
    return EXIT.ok;
  }
  const [path, ...extra] = positionals;
  if (path === undefined) throw new UsageError("validate needs an agent file");
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  try {
    const workdir = canonicalWorkdir(io, values.workdir);
    const policy = loadPolicyFlags(io, { config: values.config, policy: values.policy, namespace: values.namespace });
    const loaded = loadAgentFlag(io, path, values.namespace);
    if (!loaded.ok) {
      const findings: Finding[] = loaded.issues.map((i) => ({ severity: "error", code: FINDING_CODE.blueprintInvalid, message: formatIssue(i) }));
      if (values.json) io.stdout(`${JSON.stringify(findings.map(formatFindingJson), null, 2)}\n`);
      else io.stdout(`✗ Blueprint '${path}' is invalid.\n${findings.map(renderFinding).join("\n")}\n`);
      return EXIT.refused;
    }
    const { agent } = loaded;
    const severityRank = { error: 0, warning: 1, note: 2 } as const;
    const findings = [
      ...computeBlueprintFileFindings(agent),
      ...computeAgentFindings({ spec: agent.spec, name: agent.name, key: agent.key, policy, workdir, home: homeOf(io), advice: adviceFor(values.config, agent.format) }),
    ].sort((a, b) => severityRank[a.severity] - severityRank[b.severity]);
    if (values.json) io.stdout(`${JSON.stringify(findings.map(formatFindingJson), null, 2)}\n`);
    else {
      const lines = [`✓ Blueprint '${agent.name}' is valid.`, `  ${describeBlueprint(agent.spec)}`, ...findings.map(renderFinding)];
      io.stdout(`${lines.join("\n")}\n`);
    }
    const failing = findings.some((f) => f.severity === "error" || (values["deny-warnings"] && f.severity === "warning"));
    return failing ? EXIT.refused : EXIT.ok;
  } catch (err) {
    if (err instanceof CliStop) return err.status;
    throw err;
  }
}
