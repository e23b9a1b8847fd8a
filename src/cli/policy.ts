import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { stringify } from "smol-toml";
import { stringify as stringifyYaml } from "yaml";
import type { LeviathPolicySpec } from "../api/leviath-policy.ts";
import { formatIssue } from "../config/load-error.ts";
import { loadPolicy, sourceName, STDIN_PATH } from "../config/load.ts";
import { detectSourceFormat } from "../config/source-format.ts";
import { parseTomlDoc } from "../config/toml-source.ts";
import type { AllowlistRule } from "../policy/allowlist.ts";
import { compileRules } from "../policy/cel-library.ts";
import type { ClassificationOverride } from "../policy/classification.ts";
import { buildMcpToolName } from "../policy/mcp-overrides.ts";
import {
  buildPolicyAddRule, computePolicyTest, parseSensitivityFlag, parseTaintFlag, renderPolicyAdded, renderPolicyList, renderPolicyTest,
  type RuleFile,
} from "../policy/policy-test.ts";
import { computeIntegrityTest, parseIntegrityFlag, parseProvenanceFlag, type IntegrityTestInput } from "../policy/integrity-test.ts";
import { parseAllowlistRule } from "../policy/allowlist.ts";
import { parseCommandArgs } from "./args.ts";
import { printWarnings, resolveInput } from "./context.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";

/** `leviath policy --help`. */
export const POLICY_HELP = `Usage: leviath policy <list|add|test> [options]

The taint gate's static allowlist (policy.toml, or spec.taint of a LeviathPolicy), its CEL rules (a directory
of *.cel files, evaluated in file-name order, or spec.taint.rules) and a dry run of the gate, as upstream's
lev policy.

  leviath policy list [--policy FILE] [--rules DIR] [--config FILE]
      print the allowlist rules, the CEL rules and the classification overrides
  leviath policy add <tool> [--target PATTERN] [--max-sensitivity LEVEL] [--policy FILE]
      append one allowlist rule to policy.toml (the rest of the file, comments included, is kept); given a
      LeviathPolicy, it prints the entry to add under spec.taint.allowlist instead and exits 1
      --target PATTERN         '*', '*.example.com' (ends with), 'https://hooks/*' (starts with) or exact
      --max-sensitivity LEVEL  public, internal or private (default: internal)
  leviath policy test <tool> [--target T | --args JSON] [--taint LEVEL] [--policy FILE] [--rules DIR] [--config FILE] [--json]
      would the gate let this tool send data at this taint (default: private) to this target?
      --args JSON    the call's arguments (a JSON object): its targets are taken from them as the live gate
                     takes them (the tool's declared target, else the built-in rule), and rules see them as args
      --integrity trusted|untrusted   also run the integrity gate (issue 40) in a context of this integrity
      --provenance ARG=LEVEL,...      where each named argument of --args came from: trusted, untrusted or none
                     (with either flag the output adds an Integrity section: the tool's effect, each argument's
                     provenance, and HELD with the change that would allow it, or NOT HELD / ALLOWED by a rule)
      --json prints {tool, sensitivity, direction, clearance, taint, target, targets, result, source, rule} (and integrity)

Files:
  --policy FILE   policy.toml, or a LeviathPolicy (its spec.taint is used)
                  (default: $XDG_CONFIG_HOME/leviath/policy.toml, else ~/.config/leviath/policy.toml)
  --rules DIR     CEL rules, one expression per *.cel file over tool, target, targets, taint_level and args
                  (default: the 'rules' directory beside the policy file)
  --config FILE   config.toml, or a LeviathPolicy (its spec.taint is used; then --policy is a policy.toml)

A LeviathPolicy is YAML or JSON, one resource, one of several documents, or in a List as 'kubectl get
leviathpolicy -o yaml' prints it; files are told apart by content, so
'--policy <(kubectl get leviathpolicy cluster -o yaml)' works, and '-' reads one file from stdin.

Exit status: 0 done (policy test prints the verdict; it exits 0 for allowed and blocked alike),
1 a file is invalid, 2 usage error.
`;

function defaultPolicyPath(io: CliIo): string {
  const base = io.env["XDG_CONFIG_HOME"] || (io.homedir ? join(io.homedir, ".config") : undefined);
  if (!base) throw new UsageError("no home directory to find policy.toml in; pass --policy FILE");
  return join(base, "leviath", "policy.toml");
}

interface Sources {
  policyFile: string;
  policyGiven: boolean;
  rulesDir: string | undefined;
  config: string | undefined;
}

function sourcesOf(values: { policy?: string | undefined; rules?: string | undefined; config?: string | undefined }, io: CliIo): Sources {
  if (values.policy === STDIN_PATH && values.config === STDIN_PATH) throw new UsageError("only one file can come from stdin ('-'), not --policy and --config");
  const policyFile = resolveInput(io, values.policy ?? defaultPolicyPath(io));
  // stdin has no directory to look for rules beside.
  const rulesGuess = policyFile === STDIN_PATH ? undefined : join(dirname(policyFile), "rules");
  // A --rules path is kept as typed, so listings show it the way the user wrote it.
  const rulesDir = values.rules !== undefined ? values.rules : rulesGuess !== undefined && existsSync(rulesGuess) ? rulesGuess : undefined;
  return { policyFile, policyGiven: values.policy !== undefined, rulesDir, config: resolveInput(io, values.config) };
}

function load(src: Sources, io: CliIo): LeviathPolicySpec | number {
  // A missing default policy.toml is an empty policy, as upstream; a missing file the user named is an error.
  const policy = existsSync(src.policyFile) || src.policyGiven ? src.policyFile : undefined;
  const res = loadPolicy({ config: src.config, policy, rules: src.rulesDir }, buildMcpToolName);
  if (!res.ok) {
    for (const i of res.issues) io.stderr(`error: ${formatIssue(i)}\n`);
    return EXIT.refused;
  }
  printWarnings(io, res.warnings);
  return res.value;
}

const allowlistOf = (p: LeviathPolicySpec): AllowlistRule[] => p.taint.allowlist.map((r) => ({ ...r }));
const overridesOf = (p: LeviathPolicySpec): Map<string, ClassificationOverride> => new Map(Object.entries(p.taint.toolOverrides));

function runList(argv: string[], io: CliIo): number {
  const { values, positionals } = parseCommandArgs(argv, { policy: { type: "string" }, rules: { type: "string" }, config: { type: "string" } });
  if (values.help) return help(io);
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const src = sourcesOf(values, io);
  const policy = load(src, io);
  if (typeof policy === "number") return policy;
  let ruleFiles: RuleFile[] | undefined;
  if (src.rulesDir) ruleFiles = readdirSync(src.rulesDir).filter((n) => n.endsWith(".cel")).map((n) => ({ name: basename(n, ".cel"), path: join(src.rulesDir as string, n) }));
  else if (policy.taint.rules.length > 0) ruleFiles = policy.taint.rules.map((r) => ({ name: r.name, path: `LeviathPolicy ${sourceName(src.config ?? src.policyFile)}` }));
  io.stdout(renderPolicyList({ allowlist: allowlistOf(policy), ruleFiles, overrides: overridesOf(policy) }));
  return EXIT.ok;
}

/** A LeviathPolicy is the cluster's, applied with kubectl: say what to add, in its own syntax, rather than edit it. */
function renderYamlAllowlistAdvice(path: string, rule: AllowlistRule): string {
  const entry = { tool: rule.tool, ...(rule.to.length > 0 ? { to: [...rule.to] } : {}), maxSensitivity: rule.maxSensitivity };
  const items = stringifyYaml([entry]).trimEnd().split("\n").map((l) => `  ${l}`).join("\n");
  return `error: ${path}: a LeviathPolicy, which policy add does not edit (it appends to a policy.toml); add under its spec.taint.allowlist:\n` +
    `${items}\nand apply it (kubectl apply -f ${path}).\n`;
}

/** Why `policy add` may not append to the file at `path` (a LeviathPolicy, or TOML that does not parse); `undefined` when it may. */
function checkAppendable(path: string, named: string, rule: AllowlistRule): string | undefined {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, "utf8");
  if (detectSourceFormat(path, text) === "yaml") return renderYamlAllowlistAdvice(named, rule);
  const doc = parseTomlDoc(path, text);
  if (!doc.ok) return `error: ${formatIssue({ ...doc.issue, message: `Failed to parse policy.toml: ${doc.issue.message}` })}\n`;
  return undefined;
}

function runAdd(argv: string[], io: CliIo): number {
  const { values, positionals } = parseCommandArgs(argv, { policy: { type: "string" }, target: { type: "string" }, "max-sensitivity": { type: "string" } });
  if (values.help) return help(io);
  const [tool, ...extra] = positionals;
  if (tool === undefined || tool === "") throw new UsageError("policy add needs a tool name: leviath policy add <tool> [--target PATTERN]");
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const level = parseSensitivityFlag(values["max-sensitivity"]);
  if (!level.ok) throw new UsageError(level.error);
  if (values.policy === STDIN_PATH) throw new UsageError("policy add writes to the policy file; '-' (stdin) is not one");
  const path = resolve(io.cwd, values.policy ?? defaultPolicyPath(io));
  const rule = buildPolicyAddRule(tool, level.value, values.target);
  const refusal = checkAppendable(path, values.policy ?? path, rule);
  if (refusal !== undefined) {
    io.stderr(refusal);
    return EXIT.refused;
  }
  const block = stringify({ allowlist: [{ tool: rule.tool, to: [...rule.to], channel: [...rule.channel], max_sensitivity: rule.maxSensitivity }] });
  mkdirSync(dirname(path), { recursive: true });
  const existing = existsSync(path) ? readFileSync(path, "utf8") : "";
  const sep = existing === "" ? "" : existing.endsWith("\n") ? "\n" : "\n\n";
  appendFileSync(path, `${sep}${block}\n`);
  io.stdout(renderPolicyAdded({ tool, maxSensitivityText: values["max-sensitivity"] ?? "internal", target: values.target, path }));
  return EXIT.ok;
}

function runTest(argv: string[], io: CliIo): number {
  const { values, positionals } = parseCommandArgs(argv, {
    policy: { type: "string" }, rules: { type: "string" }, config: { type: "string" },
    target: { type: "string" }, args: { type: "string" }, taint: { type: "string" }, json: { type: "boolean" },
    integrity: { type: "string" }, provenance: { type: "string" },
  });
  if (values.help) return help(io);
  const [tool, ...extra] = positionals;
  if (tool === undefined || tool === "") throw new UsageError("policy test needs a tool name: leviath policy test <tool> [--target T] [--taint LEVEL]");
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const taint = parseTaintFlag(values.taint);
  if (!taint.ok) throw new UsageError(taint.error);
  const args = parseArgsFlag(values.args, values.target);
  const integrityFlags = parseIntegrityFlags(values, args);
  const policy = load(sourcesOf(values, io), io);
  if (typeof policy === "number") return policy;
  const rules = compileRules(policy.taint.rules.map((r) => ({ name: r.name, source: r.expression })));
  const result = computePolicyTest({ tool, target: values.target, args, taint: taint.value, allowlist: allowlistOf(policy), overrides: overridesOf(policy), rules });
  for (const d of [...rules.diagnostics, ...result.ruleDiagnostics]) io.stderr(`warning: rule '${d.rule}' has no opinion (${d.kind}): ${d.message}\n`);
  for (const w of result.warnings) io.stderr(`warning: ${w.message}\n`);
  const integrity = integrityFlags === undefined ? undefined : runIntegrityTest(policy, { tool, args: args ?? {}, target: values.target, ...integrityFlags, taint: taint.value, outbound: result.direction === "outbound" }, io);
  if (values.json) {
    const { warnings: _w, ruleDiagnostics: _d, ...plain } = result;
    const extra = integrity === undefined ? {} : { integrity: { effect: integrity.effect, context: integrityFlags?.integrity, verdict: integrity.outcome.verdict, argsProvenance: integrity.outcome.argsProvenance } };
    io.stdout(`${JSON.stringify({ ...plain, ...extra }, null, 2)}\n`);
  } else io.stdout(renderPolicyTest(result) + (integrity === undefined ? "" : `\n${integrity.lines.join("\n")}\n`));
  return EXIT.ok;
}

/** `--integrity` and `--provenance`: the integrity dry run's context, or undefined when neither is given. */
function parseIntegrityFlags(values: { integrity?: string | undefined; provenance?: string | undefined }, args: Record<string, unknown> | undefined) {
  if (values.integrity === undefined && values.provenance === undefined) return undefined;
  const integrity = parseIntegrityFlag(values.integrity ?? "trusted");
  if (!integrity.ok) throw new UsageError(integrity.error);
  const provenance = parseProvenanceFlag(values.provenance);
  if (!provenance.ok) throw new UsageError(provenance.error);
  for (const name of Object.keys(provenance.value)) {
    if (args === undefined || !Object.hasOwn(args, name)) throw new UsageError(`--provenance names '${name}', which is not an argument of --args`);
  }
  return { integrity: integrity.value, provenance: provenance.value };
}

/** The integrity dry run over the policy's spec.integrity (a policy without one: the defaults, and a note that nothing is enforced). */
function runIntegrityTest(policy: LeviathPolicySpec, call: Omit<IntegrityTestInput, "overrides" | "checkTargets" | "policy">, io: CliIo) {
  const ip = policy.integrity;
  if (!ip.enforce) io.stderr("note: spec.integrity.enforce is false in this policy: the live sidecar holds nothing; the verdict below is what it would do with enforce on\n");
  const rules = compileRules(ip.rules.map((r) => ({ name: r.name, source: r.expression })));
  for (const d of rules.diagnostics) io.stderr(`warning: integrity rule '${d.rule}' has no opinion (${d.kind}): ${d.message}\n`);
  return computeIntegrityTest({
    ...call, overrides: overridesOf(policy), checkTargets: ip.checkTargets,
    policy: { rules, taintAllowlist: allowlistOf(policy), allowlist: ip.allowlist.map((r) => parseAllowlistRule({ ...r, max_sensitivity: "private" })) },
  });
}

/** `--args`: a JSON object, never together with `--target` (the arguments name the targets themselves). */
function parseArgsFlag(text: string | undefined, target: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  if (target !== undefined) throw new UsageError("--args and --target exclude each other: with --args the targets are taken from the arguments");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--args is not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError("--args must be a JSON object (the call's arguments)");
  return value as Record<string, unknown>;
}

function help(io: CliIo): number {
  io.stdout(POLICY_HELP);
  return EXIT.ok;
}

/** Run `leviath policy <list|add|test>`. */
export function runPolicy(argv: string[], io: CliIo): number {
  const [sub, ...rest] = argv;
  if (sub === "list") return runList(rest, io);
  if (sub === "add") return runAdd(rest, io);
  if (sub === "test") return runTest(rest, io);
  if (sub === "--help" || sub === "-h") return help(io);
  throw new UsageError(sub === undefined ? "policy needs a subcommand: list, add or test" : `unknown policy subcommand '${sub}'`);
}
