import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import type { AgentSpec } from "../api/agent.ts";
import { buildAgentKey } from "../api/common.ts";
import { DEFAULT_NAMESPACE } from "../api/constants.ts";
import { LeviathPolicySpecSchema, type CelRuleSpec, type LeviathPolicySpec } from "../api/policy.ts";
import { parseBlueprintToml } from "./blueprint-toml.ts";
import { mapConfigToml, mapPolicyToml } from "./config-toml.ts";
import type { LoadIssue, Loaded } from "./load-error.ts";
import { parseAgentYaml, parsePolicyYaml } from "./resource-yaml.ts";
import { parseTomlDoc } from "./toml-source.ts";

/** An agent as the policy core sees it: its spec, its grant key and the name messages use. */
export interface LoadedAgent {
  spec: AgentSpec;
  /** `namespace/name`: the key of per-agent grants. */
  key: string;
  /** The name upstream messages print (`[agent] name`, or `metadata.name`). */
  name: string;
  format: "toml" | "yaml";
  file: string;
  /** Upstream script tools shipped beside a blueprint (`tools/*.rhai`, relative to it); they do not run here. */
  scriptTools: string[];
}

/** The `tools/*.rhai` files of a blueprint's directory, sorted; none when the directory has no `tools/`. */
function listScriptTools(blueprintFile: string): string[] {
  try {
    return readdirSync(join(dirname(blueprintFile), "tools")).filter((n) => n.endsWith(".rhai")).sort().map((n) => `tools/${n}`);
  } catch {
    return [];
  }
}

function readText(file: string): { ok: true; text: string } | { ok: false; issue: LoadIssue } {
  try {
    return { ok: true, text: readFileSync(file, "utf8") };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : code === "EACCES" ? "permission denied" : String((err as Error).message);
    return { ok: false, issue: { file, message: `cannot read: ${why}` } };
  }
}

/** Whether a file is read as YAML (our resources) rather than TOML (upstream's files), by its extension. */
export const isYamlFile = (file: string): boolean => [".yaml", ".yml", ".json"].includes(extname(file).toLowerCase());

/** Load an agent from `agent.leviath` (TOML), a directory holding one, or an `Agent` YAML/JSON resource. */
export function loadAgent(path: string, namespace = DEFAULT_NAMESPACE): Loaded<LoadedAgent> {
  let file = path;
  if (existsSync(path) && statSync(path).isDirectory()) file = join(path, "agent.leviath");
  const read = readText(file);
  if (!read.ok) return { ok: false, issues: [read.issue] };
  if (isYamlFile(file)) {
    const res = parseAgentYaml(file, read.text, namespace);
    if (!res.ok) return res;
    const { spec, name } = res.value;
    return { ok: true, warnings: res.warnings, value: { spec, name, key: buildAgentKey(res.value.namespace, name), format: "yaml", file, scriptTools: [] } };
  }
  const doc = parseTomlDoc(file, read.text);
  if (!doc.ok) return { ok: false, issues: [doc.issue] };
  const res = parseBlueprintToml(doc.doc);
  if (!res.ok) return res;
  // Upstream's default name; the grant key takes the namespace the caller gives.
  const name = res.value.agent.name ?? "unnamed";
  return { ok: true, warnings: res.warnings, value: { spec: res.value, name, key: buildAgentKey(namespace, name), format: "toml", file, scriptTools: listScriptTools(file) } };
}

/** Where the admin's side comes from: config.toml or a LeviathPolicy YAML, policy.toml, a rules directory. */
export interface PolicySources {
  config?: string | undefined;
  policy?: string | undefined;
  rules?: string | undefined;
  namespace?: string | undefined;
}

/** Read CEL rule files (`*.cel`) of a directory, sorted by name; the stem is the rule's name. */
export function loadRulesDir(dir: string): Loaded<CelRuleSpec[]> {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".cel")).sort();
  } catch (err) {
    return { ok: false, issues: [{ file: dir, message: `cannot read the rules directory: ${(err as NodeJS.ErrnoException).code ?? String(err)}` }] };
  }
  const rules: CelRuleSpec[] = [];
  for (const n of names) {
    const read = readText(join(dir, n));
    if (!read.ok) return { ok: false, issues: [read.issue] };
    rules.push({ name: basename(n, ".cel"), expression: read.text.trim() });
  }
  return { ok: true, value: rules, warnings: [] };
}

/** Merge the admin's files into one LeviathPolicy spec, checked by the schema; nothing given means the empty policy. */
export function loadPolicy(src: PolicySources, sanitize: (server: string, tool: string) => string): Loaded<LeviathPolicySpec> {
  const ns = src.namespace ?? DEFAULT_NAMESPACE;
  const warnings: LoadIssue[] = [];
  let draft: Record<string, unknown> = {};
  if (src.config) {
    const read = readText(src.config);
    if (!read.ok) return { ok: false, issues: [read.issue] };
    if (isYamlFile(src.config)) {
      const res = parsePolicyYaml(src.config, read.text);
      if (!res.ok) return res;
      draft = structuredClone(res.value.spec) as Record<string, unknown>;
    } else {
      const doc = parseTomlDoc(src.config, read.text);
      if (!doc.ok) return { ok: false, issues: [doc.issue] };
      const mapped = mapConfigToml(doc.doc, ns);
      if (mapped.issues.length > 0) return { ok: false, issues: mapped.issues };
      warnings.push(...mapped.warnings);
      draft = mapped.draft;
    }
  }
  const taint: Record<string, unknown> = { ...((draft["taint"] as Record<string, unknown> | undefined) ?? {}) };
  if (src.policy) {
    const read = readText(src.policy);
    if (!read.ok) return { ok: false, issues: [read.issue] };
    const doc = parseTomlDoc(src.policy, read.text);
    if (!doc.ok) return { ok: false, issues: [{ ...doc.issue, message: `Failed to parse policy.toml: ${doc.issue.message}` }] };
    const mapped = mapPolicyToml(doc.doc, sanitize);
    if (mapped.issues.length > 0) return { ok: false, issues: mapped.issues };
    warnings.push(...mapped.warnings);
    Object.assign(taint, mapped.taint);
  }
  if (src.rules) {
    const rules = loadRulesDir(src.rules);
    if (!rules.ok) return rules;
    taint["rules"] = rules.value;
  }
  if (Object.keys(taint).length > 0) draft["taint"] = taint;
  const parsed = LeviathPolicySpecSchema.safeParse(draft);
  if (!parsed.success) {
    const file = src.config ?? src.policy ?? "policy";
    return { ok: false, issues: parsed.error.issues.map((i) => ({ file, where: i.path.join("."), message: i.message })) };
  }
  return { ok: true, value: parsed.data, warnings };
}
