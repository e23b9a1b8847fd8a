import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { AgentSpec } from "../api/agent.ts";
import { buildAgentKey } from "../api/common.ts";
import { DEFAULT_NAMESPACE } from "../api/constants.ts";
import { LeviathPolicySpecSchema, type CelRuleSpec, type LeviathPolicySpec } from "../api/leviath-policy.ts";
import { parseBlueprintToml } from "./blueprint-toml.ts";
import { mapConfigToml, mapPolicyToml } from "./config-toml.ts";
import type { LoadIssue, Loaded } from "./load-error.ts";
import { parseAgentYaml, parsePolicyYaml } from "./resource-yaml.ts";
import { detectSourceFormat, type SourceFormat } from "./source-format.ts";
import { parseTomlDoc } from "./toml-source.ts";

/** An agent as the policy core sees it: its spec, its grant key and the name messages use. */
export interface LoadedAgent {
  spec: AgentSpec;
  /** `namespace/name`: the key of per-agent grants. */
  key: string;
  /** The name upstream messages print (`[agent] name`, or `metadata.name`). */
  name: string;
  format: SourceFormat;
  /** The file as messages name it (`<stdin>` for `-`). */
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

/** The path that means standard input, as kubectl's `-f -`: read once, named `<stdin>` in messages. */
export const STDIN_PATH = "-";

/** A file's name in messages: `<stdin>` for {@link STDIN_PATH}. */
export const sourceName = (file: string): string => (file === STDIN_PATH ? "<stdin>" : file);

function readStdin(): string {
  try {
    return readFileSync(0, "utf8");
  } catch (err) {
    // A non-blocking stdin (left so by a parent) refuses a synchronous read; a fresh descriptor of it blocks.
    if ((err as NodeJS.ErrnoException).code === "EAGAIN") return readFileSync("/dev/stdin", "utf8");
    throw err;
  }
}

interface SourceText {
  /** The name messages use. */
  name: string;
  text: string;
  format: SourceFormat;
}

/** Read a file (or stdin for `-`) and tell its syntax by content; an unreadable one is an issue naming it. */
function readSource(file: string): { ok: true; source: SourceText } | { ok: false; issue: LoadIssue } {
  const name = sourceName(file);
  try {
    const text = file === STDIN_PATH ? readStdin() : readFileSync(file, "utf8");
    return { ok: true, source: { name, text, format: detectSourceFormat(file, text) } };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : code === "EACCES" ? "permission denied" : String((err as Error).message);
    return { ok: false, issue: { file: name, message: `cannot read: ${why}` } };
  }
}

/**
 * Load an agent from `agent.leviath` (TOML), a directory holding one, an `Agent` YAML/JSON resource (alone, among
 * other documents, or in a `kind: List`), or stdin for `-`; the syntax is told by content.
 */
export function loadAgent(path: string, namespace = DEFAULT_NAMESPACE): Loaded<LoadedAgent> {
  let file = path;
  if (path !== STDIN_PATH && existsSync(path) && statSync(path).isDirectory()) file = join(path, "agent.leviath");
  const read = readSource(file);
  if (!read.ok) return { ok: false, issues: [read.issue] };
  const { name: shown, text } = read.source;
  if (read.source.format === "yaml") {
    const res = parseAgentYaml(shown, text, namespace);
    if (!res.ok) return res;
    const { spec, name } = res.value;
    return { ok: true, warnings: res.warnings, value: { spec, name, key: buildAgentKey(res.value.namespace, name), format: "yaml", file: shown, scriptTools: [] } };
  }
  const doc = parseTomlDoc(shown, text);
  if (!doc.ok) return { ok: false, issues: [doc.issue] };
  const res = parseBlueprintToml(doc.doc);
  if (!res.ok) return res;
  // Upstream's default name; the grant key takes the namespace the caller gives.
  const name = res.value.agent.name ?? "unnamed";
  const scriptTools = file === STDIN_PATH ? [] : listScriptTools(file);
  return { ok: true, warnings: res.warnings, value: { spec: res.value, name, key: buildAgentKey(namespace, name), format: "toml", file: shown, scriptTools } };
}

/**
 * Where the admin's side comes from: config.toml or a LeviathPolicy, policy.toml, a rules directory. A LeviathPolicy
 * holds the whole admin side, so it may stand as `policy` too when no `config` is given.
 */
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
    const read = readSource(join(dir, n));
    if (!read.ok) return { ok: false, issues: [read.issue] };
    rules.push({ name: basename(n, ".cel"), expression: read.source.text.trim() });
  }
  return { ok: true, value: rules, warnings: [] };
}

/** The admin's policy, and the syntax of the file it came from (which the advice about it should speak). */
export interface LoadedPolicy {
  spec: LeviathPolicySpec;
  /** `config`'s syntax, else `policy`'s; null when neither was given. */
  format: SourceFormat | null;
}

/** The draft spec of config.toml or of a LeviathPolicy (a lone resource, one of several documents, or in a List). */
function draftOfConfig(source: SourceText, ns: string): Loaded<Record<string, unknown>> {
  if (source.format === "yaml") {
    const res = parsePolicyYaml(source.name, source.text);
    return res.ok ? { ok: true, value: structuredClone(res.value.spec) as Record<string, unknown>, warnings: res.warnings } : res;
  }
  const doc = parseTomlDoc(source.name, source.text);
  if (!doc.ok) return { ok: false, issues: [doc.issue] };
  const mapped = mapConfigToml(doc.doc, ns);
  if (mapped.issues.length > 0) return { ok: false, issues: mapped.issues };
  return { ok: true, value: mapped.draft, warnings: mapped.warnings };
}

/** The taint section of policy.toml, and its `[integrity]` (ours) when it has one. */
function taintOfPolicyToml(source: SourceText, sanitize: (server: string, tool: string) => string): Loaded<{ taint: Record<string, unknown>; integrity: Record<string, unknown> | undefined }> {
  const doc = parseTomlDoc(source.name, source.text);
  if (!doc.ok) return { ok: false, issues: [{ ...doc.issue, message: `Failed to parse policy.toml: ${doc.issue.message}` }] };
  const mapped = mapPolicyToml(doc.doc, sanitize);
  if (mapped.issues.length > 0) return { ok: false, issues: mapped.issues };
  return { ok: true, value: { taint: mapped.taint, integrity: mapped.integrity }, warnings: mapped.warnings };
}

/** Read the given files; a LeviathPolicy given as `policy` stands as the config, and beside a config is refused. */
function readAdminSources(src: PolicySources): Loaded<{ config?: SourceText; policy?: SourceText }> {
  const out: { config?: SourceText; policy?: SourceText } = {};
  for (const which of ["config", "policy"] as const) {
    const file = src[which];
    if (!file) continue;
    const read = readSource(file);
    if (!read.ok) return { ok: false, issues: [read.issue] };
    out[which] = read.source;
  }
  if (out.policy?.format !== "yaml") return { ok: true, value: out, warnings: [] };
  if (out.config) {
    return { ok: false, issues: [{ file: out.policy.name, message: "a LeviathPolicy is the whole admin side (its spec.taint is what policy.toml holds); give it alone, not beside a config" }] };
  }
  return { ok: true, value: { config: out.policy }, warnings: [] };
}

/** The taint section: the config's, then policy.toml's allowlist and overrides, then the rules directory's CEL rules. */
function loadTaint(fromConfig: Record<string, unknown> | undefined, more: { policy: Parameters<typeof taintOfPolicyToml>[0] | undefined; rules: string | undefined; sanitize: (server: string, tool: string) => string }): Loaded<{ taint: Record<string, unknown>; integrity: Record<string, unknown> | undefined }> {
  const taint: Record<string, unknown> = { ...(fromConfig ?? {}) };
  const warnings: LoadIssue[] = [];
  let integrity: Record<string, unknown> | undefined;
  if (more.policy) {
    const res = taintOfPolicyToml(more.policy, more.sanitize);
    if (!res.ok) return res;
    warnings.push(...res.warnings);
    Object.assign(taint, res.value.taint);
    integrity = res.value.integrity;
  }
  if (more.rules) {
    const rules = loadRulesDir(more.rules);
    if (!rules.ok) return rules;
    taint["rules"] = rules.value;
  }
  return { ok: true, value: { taint, integrity }, warnings };
}

/** Puts the taint section (when it has anything) and policy.toml's `[integrity]` (when given) into the draft. */
function placeTaintSections(draft: Record<string, unknown>, sections: { taint: Record<string, unknown>; integrity: Record<string, unknown> | undefined }): void {
  if (Object.keys(sections.taint).length > 0) draft["taint"] = sections.taint;
  if (sections.integrity !== undefined) draft["integrity"] = sections.integrity;
}

/**
 * Merge the admin's files into one LeviathPolicy spec, checked by the schema; nothing given means the empty policy.
 * Each file's syntax is told by its content, and `-` is stdin.
 */
export function loadPolicyFiles(src: PolicySources, sanitize: (server: string, tool: string) => string): Loaded<LoadedPolicy> {
  const ns = src.namespace ?? DEFAULT_NAMESPACE;
  const sources = readAdminSources(src);
  if (!sources.ok) return sources;
  const { config, policy } = sources.value;
  const warnings: LoadIssue[] = [];
  let draft: Record<string, unknown> = {};
  if (config) {
    const res = draftOfConfig(config, ns);
    if (!res.ok) return res;
    warnings.push(...res.warnings);
    draft = res.value;
  }
  const taint = loadTaint(draft["taint"] as Record<string, unknown> | undefined, { policy, rules: src.rules, sanitize });
  if (!taint.ok) return taint;
  warnings.push(...taint.warnings);
  placeTaintSections(draft, taint.value);
  const parsed = LeviathPolicySpecSchema.safeParse(draft);
  if (!parsed.success) {
    const file = config?.name ?? policy?.name ?? "policy";
    return { ok: false, issues: parsed.error.issues.map((i) => ({ file, where: i.path.join("."), message: i.message })) };
  }
  return { ok: true, value: { spec: parsed.data, format: (config ?? policy)?.format ?? null }, warnings };
}

/** {@link loadPolicyFiles}, the spec alone. */
export function loadPolicy(src: PolicySources, sanitize: (server: string, tool: string) => string): Loaded<LeviathPolicySpec> {
  const res = loadPolicyFiles(src, sanitize);
  return res.ok ? { ok: true, value: res.value.spec, warnings: res.warnings } : res;
}
