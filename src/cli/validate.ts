import { DEFAULT_NAMESPACE } from "../api/constants.ts";
import { formatIssue } from "../config/load-error.ts";
import { FINDING_CODE, formatFindingJson, type Finding, type FindingAdvice } from "../api/findings.ts";
import { sourceName, type LoadedAgent, type LoadedPolicy } from "../config/load.ts";
import type { SourceFormat } from "../config/source-format.ts";
import { computeAgentFindings, describeBlueprint } from "../policy/agent-findings.ts";
import { renderFinding } from "../policy/read-paths/index.ts";
import { computeRuntimeCeilingFinding } from "../policy/ceilings.ts";
import { computePolicyToolNameFindings } from "../policy/tool-name-findings.ts";
import { parseCommandArgs } from "./args.ts";
import { computeBlueprintFileFindings } from "./blueprint-findings.ts";
import { canonicalWorkdir, checkOneStdin, CliStop, homeOf, loadAgentFlag, loadPolicyFlags } from "./context.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";

/** `leviath validate --help`. */
export const VALIDATE_HELP = `Usage: leviath validate <agent> [options]

Check a blueprint, and how the admin's policy treats it, before anything runs: upstream's lev validate
findings (read-paths-declared, read-paths-not-granted, read-paths-grant-invalid, broad-read-path) with the
"granted over declared" counts and the stanza to add, plus sandbox and permission findings, and with a
LeviathPolicy the runtime ceilings the controller applies (runtime-kind-not-allowed,
runtime-template-not-declared, runtime-image-not-allowed; an Agent naming no image passes, as the
controller's default image does). Read-path
grants are compared as patterns here; 'leviath paths test' checks one real path.

  <agent>                  agent.leviath, a directory holding one, or an Agent (YAML or JSON: a file, several
                           documents, or a List as 'kubectl get agent -o yaml' prints); '-' reads stdin

Options:
      --config FILE        the admin's config.toml or a LeviathPolicy (YAML or JSON, a List too; '-' is stdin,
                           so '--config <(kubectl get leviathpolicy cluster -o yaml)' works); without it, no
                           grants are known and the declarations are reported as inert
      --policy FILE        policy.toml (the taint allowlist and overrides), or a LeviathPolicy given instead
                           of --config
  -n, --namespace NS       namespace of the agent for per-agent grants (default: ${DEFAULT_NAMESPACE}; an Agent
                           YAML's own namespace wins)
      --workdir DIR        the directory relative entries resolve against (default: the current directory)
      --deny-warnings      exit 1 when there are warnings
      --json               print the findings as a JSON array of {severity, code, stage, message, fix}
  -h, --help               show this help

Every file is told apart by content, not by its name: YAML resources or upstream TOML. Advice names the
fields of the files given: a LeviathPolicy's (spec.toolPermissions.shell) or config.toml's
([tool_permissions] shell), an Agent's (spec.stages[0].sandbox) or agent.leviath's.
'~' in entries is LEVIATH_HOME when set (even to an empty string), else your home directory.
Exit status: 0 valid (warnings allowed), 1 invalid (or warnings with --deny-warnings), 2 usage error.
`;

/**
 * Advice names the files given: the admin's side speaks the syntax of the policy file read (a LeviathPolicy, or
 * config.toml), and without one follows the blueprint's; the blueprint's side is its own syntax.
 */
function adviceFor(policy: SourceFormat | null, blueprint: SourceFormat): FindingAdvice {
  return { policy: (policy ?? blueprint) === "yaml" ? "LeviathPolicy" : "config.toml", blueprint: blueprint === "yaml" ? "Agent" : "agent.leviath" };
}

/** Every finding of `leviath validate`, errors first: the blueprint's files, the Agent against the policy, the runtime ceilings. */
function computeValidateFindings({ agent, admin, workdir, home }: { agent: LoadedAgent; admin: LoadedPolicy | null; workdir: string; home: string | undefined }): Finding[] {
  const severityRank = { error: 0, warning: 1, note: 2 } as const;
  return [
    ...computeBlueprintFileFindings(agent),
    ...computeAgentFindings({ spec: agent.spec, name: agent.name, key: agent.key, policy: admin?.spec ?? null, workdir, home, advice: adviceFor(admin?.format ?? null, agent.format) }),
    ...(admin ? computePolicyToolNameFindings(admin.spec, adviceFor(admin.format, agent.format)) : []),
    // The controller's default image is not known here: an Agent naming none passes, as it does in the cluster.
    ...(admin ? [computeRuntimeCeilingFinding(admin.spec, agent.spec, undefined)].filter((f) => f !== undefined) : []),
  ].sort((a, b) => severityRank[a.severity] - severityRank[b.severity]);
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
  checkOneStdin({ "<agent>": path, "--config": values.config, "--policy": values.policy });
  try {
    const workdir = canonicalWorkdir(io, values.workdir);
    const admin = loadPolicyFlags(io, { config: values.config, policy: values.policy, namespace: values.namespace });
    const loaded = loadAgentFlag(io, path, values.namespace);
    if (!loaded.ok) {
      const findings: Finding[] = loaded.issues.map((i) => ({ severity: "error", code: FINDING_CODE.blueprintInvalid, message: formatIssue(i) }));
      if (values.json) io.stdout(`${JSON.stringify(findings.map(formatFindingJson), null, 2)}\n`);
      else io.stdout(`✗ Blueprint '${sourceName(path)}' is invalid.\n${findings.map(renderFinding).join("\n")}\n`);
      return EXIT.refused;
    }
    const { agent } = loaded;
    const findings = computeValidateFindings({ agent, admin, workdir, home: homeOf(io) });
    if (values.json) io.stdout(`${JSON.stringify(findings.map(formatFindingJson), null, 2)}\n`);
    else {
      const errors = findings.filter((f) => f.severity === "error").length;
      const verdict = errors === 0 ? `✓ Blueprint '${agent.name}' is valid.` : `✗ Blueprint '${agent.name}' is invalid (${errors} error${errors > 1 ? "s" : ""}).`;
      const lines = [verdict, `  ${describeBlueprint(agent.spec)}`, ...findings.map(renderFinding)];
      io.stdout(`${lines.join("\n")}\n`);
    }
    const failing = findings.some((f) => f.severity === "error" || (values["deny-warnings"] && f.severity === "warning"));
    return failing ? EXIT.refused : EXIT.ok;
  } catch (err) {
    if (err instanceof CliStop) return err.status;
    throw err;
  }
}
