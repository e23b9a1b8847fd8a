import { readFileSync } from "node:fs";
import { stringify } from "yaml";
import { API_VERSION, CLUSTER_POLICY_NAME, DEFAULT_NAMESPACE, KIND } from "../api/constants.ts";
import { formatIssue, type LoadIssue } from "../config/load-error.ts";
import { loadAgent, loadPolicyFiles, sourceName, type PolicySources } from "../config/load.ts";
import { detectSourceFormat } from "../config/source-format.ts";
import { parseTomlDoc, isTable } from "../config/toml-source.ts";
import { buildMcpToolName } from "../policy/mcp-overrides.ts";
import { parseCommandArgs } from "./args.ts";
import { checkAgentName, describeScriptTools } from "./blueprint-findings.ts";
import { printWarnings } from "./context.ts";
import { computeMcpSecretRefs } from "./import-mcp-secrets.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";

/** `leviath import --help`. */
export const IMPORT_HELP = `Usage: leviath import <agent.leviath | config.toml [policy.toml]> [options]

Print the Agent or LeviathPolicy YAML equivalent to upstream Leviath files, ready for kubectl apply. Given
our own YAML (an Agent, or a LeviathPolicy; also in a List), it prints it checked and normalized.

  agent.leviath            an upstream blueprint (a directory holding one works too) -> Agent
  config.toml [policy.toml]
                           the admin's config and, optionally, the taint policy -> LeviathPolicy 'cluster'

Options:
  -n, --namespace NS       namespace of the Agent, and of the agents that per-agent grants
                           ([agent_read_paths.<name>], [agent_tool_permissions.<name>]) are keyed to
                           (default: ${DEFAULT_NAMESPACE})
      --name NAME          metadata.name of the Agent (default: the blueprint's [agent] name)
      --rules DIR          with config.toml: CEL rule files (*.cel) to include, evaluated by name
  -h, --help               show this help

What cannot be carried is said on stderr: upstream keys the operator does not use, in one block per file
grouped by table, and a blueprint's tools/*.rhai script tools, which do not run here. A ':ro' or ':rw'
suffix on a [sandbox] mount is read as the mount's mode.

An [[mcp_servers]] entry's transport is checked against its command or url; a key upstream does not define is
refused, naming the entry. A server whose headers or env use \${VAR} gets a secretRef (<server>-mcp): in a cluster
the sidecar reads \${VAR} only from that Secret, and stderr says which keys to put in it, with the kubectl commands.

Exit status: 0 printed, 1 a file is invalid (the problems are printed), 2 usage error.
`;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function printIssues(io: CliIo, issues: LoadIssue[]): number {
  for (const i of issues) io.stderr(`error: ${formatIssue(i)}\n`);
  return EXIT.refused;
}

/** A blueprint (agent.leviath, or an Agent resource, which comes out checked and normalized) rather than the admin's files. */
function isBlueprint(file: string): boolean {
  if (file.endsWith(".leviath")) return true;
  try {
    const text = readFileSync(file, "utf8");
    if (detectSourceFormat(file, text) === "yaml") return /^\s*-?\s*kind:\s*["']?Agent["']?\s*$/m.test(text);
    const doc = parseTomlDoc(file, text);
    return doc.ok && isTable(doc.doc.data["agent"]);
  } catch {
    return true; // a directory or unreadable path: let the agent loader name the problem
  }
}

/** A blueprint as an Agent resource, named by `--name` or its own `[agent] name`. */
function importBlueprint(io: CliIo, file: string, at: { namespace: string; nsAsked: boolean; name: string | undefined }): number {
  const { namespace } = at;
  const res = loadAgent(file, namespace);
  if (!res.ok) return printIssues(io, res.issues);
  const name = at.name ?? res.value.name;
  const nameProblem = checkAgentName(name);
  if (nameProblem !== null) return printIssues(io, [{ file: res.value.file, where: at.name === undefined ? "[agent] name" : "--name", message: nameProblem }]);
  printWarnings(io, res.value.scriptTools.length === 0 ? res.warnings : [...res.warnings, { file: res.value.file, message: describeScriptTools(res.value.scriptTools) }]);
  const spec = structuredClone(res.value.spec);
  spec.agent.name = name;
  const out: Record<string, unknown> = { ...spec };
  if (spec.stages.length === 0) delete out["stages"];
  // An Agent resource keeps its own namespace unless one is asked for.
  const ns = res.value.format === "yaml" && !at.nsAsked ? (res.value.key.split("/")[0] ?? namespace) : namespace;
  io.stdout(stringify({ apiVersion: API_VERSION, kind: KIND.agent, metadata: { name, namespace: ns }, spec: out }));
  return EXIT.ok;
}

/** Run `leviath import`. */
export function runImport(argv: string[], io: CliIo): number {
  const { values, positionals } = parseCommandArgs(argv, {
    namespace: { type: "string", short: "n" },
    name: { type: "string" },
    rules: { type: "string" },
  });
  if (values.help) {
    io.stdout(IMPORT_HELP);
    return EXIT.ok;
  }
  const [first, second, ...extra] = positionals;
  if (first === undefined) throw new UsageError("import needs a file: agent.leviath, or config.toml [policy.toml]");
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const namespace = values.namespace ?? DEFAULT_NAMESPACE;
  if (!DNS_LABEL.test(namespace)) throw new UsageError(`--namespace '${namespace}' is not a valid namespace name`);

  if (isBlueprint(first)) {
    if (second !== undefined) throw new UsageError("a blueprint is imported alone; policy.toml goes with config.toml");
    return importBlueprint(io, first, { namespace, nsAsked: values.namespace !== undefined, name: values.name });
  }
  return importPolicy(io, { config: first, policy: second, rules: values.rules, namespace });
}

/**
 * The admin's files as the LeviathPolicy `cluster`. From config.toml, each MCP server that takes `${VAR}` gets the
 * Secret it reads them from in a cluster, said on stderr with the commands that create it (import-mcp-secrets.ts).
 */
function importPolicy(io: CliIo, src: Required<Pick<PolicySources, "config" | "namespace">> & PolicySources): number {
  const res = loadPolicyFiles(src, buildMcpToolName);
  if (!res.ok) return printIssues(io, res.issues);
  printWarnings(io, res.warnings);
  let spec = res.value.spec;
  if (res.value.format === "toml") {
    const mcp = computeMcpSecretRefs(spec.mcpServers, { file: sourceName(src.config), namespace: src.namespace });
    printWarnings(io, mcp.warnings);
    spec = { ...spec, mcpServers: mcp.servers };
  }
  io.stdout(stringify({ apiVersion: API_VERSION, kind: KIND.policy, metadata: { name: CLUSTER_POLICY_NAME }, spec }));
  return EXIT.ok;
}
