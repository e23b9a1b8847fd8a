import type { z } from "zod";
import { AgentSpecSchema, ENFORCED_STAGE_KEYS, UPSTREAM_STAGE_KEYS, type AgentSpec } from "../api/agent.ts";
import { validateEntrySyntax } from "../policy/read-paths/index.ts";
import type { LoadIssue, Loaded } from "./load-error.ts";
import { parseMountText } from "./mount-text.ts";
import { isTable, locateTomlLine, tableOrder, tomlTable, type TomlDoc } from "./toml-source.ts";

/** Upstream `[sandbox]` keys (the seed's list); `mount` and `mounts` are one key. */
export const SANDBOX_TOML_KEYS = ["kind", "image", "engine", "network", "mount", "mounts", "persist", "on_unavailable"];
const AGENT_MODELLED = ["name", "version", "description", "entry_stage"];
const TOP_MODELLED = ["agent", "sandbox", "read_paths", "tool_permissions", "security", "safe_commands", "tool_script_permissions", "stages"];

/** snake_case to camelCase, for the keys we model. */
export const camel = (k: string): string => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
/** camelCase to snake_case, to name a key the way the TOML author wrote it. */
export const snake = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

class Collector {
  readonly issues: LoadIssue[] = [];
  readonly warnings: LoadIssue[] = [];
  readonly doc: TomlDoc;
  constructor(doc: TomlDoc) {
    this.doc = doc;
  }
  add(table: string[], key: string | undefined, message: string, into: LoadIssue[] = this.issues): void {
    const line = locateTomlLine(this.doc, table, key);
    const head = table.length === 0 ? "" : tomlTable(table);
    const where = key === undefined ? head : head === "" ? key : `${head} ${key}`;
    into.push({ file: this.doc.file, where, message, ...(line === undefined ? {} : { line }) });
  }
  /** Report keys of `table` outside `valid`, in upstream's shape. */
  strict(table: string[], value: Record<string, unknown>, valid: readonly string[]): void {
    for (const key of Object.keys(value)) {
      if (!valid.includes(key)) this.add(table, key, `${tomlTable(table)} has unknown key '${key}' (valid: ${valid.join(", ")})`);
    }
  }
}

function mapSandbox(c: Collector, table: string[], raw: unknown): Record<string, unknown> | undefined {
  if (!isTable(raw)) {
    c.add(table, undefined, `${tomlTable(table)} must be a table`);
    return undefined;
  }
  c.strict(table, raw, SANDBOX_TOML_KEYS);
  if ("mount" in raw && "mounts" in raw) c.add(table, "mounts", "set either 'mount' or 'mounts', not both");
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!SANDBOX_TOML_KEYS.includes(k)) continue;
    out[k === "mount" ? "mounts" : camel(k)] = k === "mount" || k === "mounts" ? mapBlueprintMounts(c, table, k, v) : v;
  }
  return out;
}

/**
 * A blueprint's mounts are paths only: `/opt/toolchain:ro` is `/opt/toolchain`. Whether a mount is writable is the
 * admin's (the policy's mount of that path); a blueprint's `:rw` cannot widen it, and is said so.
 */
function mapBlueprintMounts(c: Collector, table: string[], key: string, v: unknown): unknown {
  if (!Array.isArray(v)) return v;
  return v.map((m: unknown) => {
    if (typeof m !== "string") return m;
    const parsed = parseMountText(m);
    if (parsed.readOnly === false) c.add(table, key, `'${m}': a blueprint cannot make a mount writable; the admin's mount of ${parsed.path} decides`, c.warnings);
    return parsed.path;
  });
}

function mapSecurity(c: Collector, table: string[], raw: unknown): Record<string, unknown> | undefined {
  if (!isTable(raw)) {
    c.add(table, undefined, `${tomlTable(table)} must be a table`);
    return undefined;
  }
  c.strict(table, raw, ["taint_tracking"]);
  return "taint_tracking" in raw ? { taintTracking: raw["taint_tracking"] } : {};
}

function mapReadPaths(c: Collector, raw: unknown): Record<string, unknown> | undefined {
  // Upstream: a `read_paths` that is not a table is ignored; `allow` missing or not an array is empty.
  if (!isTable(raw)) return undefined;
  c.strict(["read_paths"], raw, ["allow"]);
  const allow = raw["allow"];
  if (!Array.isArray(allow)) return { allow: [] };
  const bad = allow.find((e) => typeof e !== "string");
  if (bad !== undefined) {
    c.add(["read_paths"], "allow", `[read_paths] allow entries must be strings, got: ${JSON.stringify(bad)}`);
    return undefined;
  }
  // Upstream checks every entry's syntax at parse time; the first bad one fails the whole blueprint.
  for (const entry of allow as string[]) {
    const checked = validateEntrySyntax(entry);
    if (!checked.ok) {
      c.add(["read_paths"], "allow", checked.error);
      return undefined;
    }
  }
  return { allow };
}

function mapStage(c: Collector, name: string, raw: unknown): Record<string, unknown> | undefined {
  const table = ["stages", name];
  if (!isTable(raw)) {
    c.add(table, undefined, `${tomlTable(table)} must be a table`);
    return undefined;
  }
  c.strict(table, raw, UPSTREAM_STAGE_KEYS);
  const stage: Record<string, unknown> = { name };
  const runtime: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (k === "sandbox") stage["sandbox"] = mapSandbox(c, [...table, "sandbox"], v);
    else if (k === "security") stage["security"] = mapSecurity(c, [...table, "security"], v);
    else if ((ENFORCED_STAGE_KEYS as readonly string[]).includes(k)) stage[camel(k)] = v;
    else if ((UPSTREAM_STAGE_KEYS as readonly string[]).includes(k)) runtime[k] = v;
  }
  if (Object.keys(runtime).length > 0) stage["runtime"] = runtime;
  return stage;
}

/** Map a zod issue path on the camelCase spec back to the TOML table and key the author wrote. */
function tomlPathOf(path: readonly PropertyKey[], stageNames: string[]): { table: string[]; key?: string } {
  const parts = path.map((p) => (typeof p === "number" ? p : String(p)));
  const out: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p === undefined) break;
    if (out[0] === "stages" && out.length === 1 && typeof p === "number") out.push(stageNames[p] ?? String(p));
    else if (p === "runtime" || (p === "blueprint" && i === 0)) continue;
    else if (p === "mounts" && out.length > 0) out.push("mounts");
    else out.push(typeof p === "number" ? String(p) : snake(p));
  }
  const key = out.pop();
  return key === undefined ? { table: out } : { table: out, key };
}

/** `[agent]`: the keys the spec models, camelCased, and the rest under `runtime` (the runtime's own settings). */
function mapAgentTable(agentRaw: Record<string, unknown>): Record<string, unknown> {
  const agent: Record<string, unknown> = {};
  const agentRuntime: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(agentRaw)) {
    if (AGENT_MODELLED.includes(k)) agent[camel(k)] = v;
    else agentRuntime[k] = v;
  }
  if (Object.keys(agentRuntime).length > 0) agent["runtime"] = agentRuntime;
  return agent;
}

/** The top-level tables mapped one to one onto a spec field (`[read_paths]` and `[stages.*]` are mapped apart). */
const TOP_TABLES: readonly (readonly [string, string, (c: Collector, value: unknown) => unknown])[] = [
  ["sandbox", "sandbox", (c, v) => mapSandbox(c, ["sandbox"], v)],
  ["tool_permissions", "toolPermissions", (_c, v) => v],
  ["security", "security", (c, v) => mapSecurity(c, ["security"], v)],
  ["safe_commands", "safeCommands", (_c, v) => v],
  ["tool_script_permissions", "toolScriptPermissions", (_c, v) => v],
];

/** Turn an upstream `agent.leviath` document into the Agent spec, reporting every problem with its table and line. */
export function parseBlueprintToml(doc: TomlDoc): Loaded<AgentSpec> {
  const c = new Collector(doc);
  const data = doc.data;
  if (!isTable(data["agent"])) {
    c.add([], undefined, "missing [agent] table (every blueprint starts with [agent] name = \"...\")");
    return { ok: false, issues: c.issues };
  }
  const spec: Record<string, unknown> = { agent: mapAgentTable(data["agent"]) };
  for (const [table, field, map] of TOP_TABLES) if (table in data) spec[field] = map(c, data[table]);
  if ("read_paths" in data) {
    const rp = mapReadPaths(c, data["read_paths"]);
    if (rp) spec["readPaths"] = rp;
  }
  const stageNames = isTable(data["stages"]) ? tableOrder(doc, "stages") : [];
  if ("stages" in data) {
    if (!isTable(data["stages"])) c.add([], "stages", "'stages' must be a table of [stages.<name>] tables");
    else spec["stages"] = stageNames.map((n) => mapStage(c, n, (data["stages"] as Record<string, unknown>)[n]));
  }
  const rest = Object.fromEntries(Object.entries(data).filter(([k]) => !TOP_MODELLED.includes(k)));
  if (Object.keys(rest).length > 0) spec["blueprint"] = rest;
  if (c.issues.length > 0) return { ok: false, issues: c.issues };

  const parsed = AgentSpecSchema.safeParse(spec);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const { table, key } = tomlPathOf(issue.path, stageNames);
      c.add(table, key, describeZodIssue(issue, key));
    }
    return { ok: false, issues: c.issues };
  }
  return { ok: true, value: parsed.data, warnings: c.warnings };
}

/** A zod issue in the words of the file format (snake_case keys, TOML types). */
export function describeZodIssue(issue: z.core.$ZodIssue, key: string | undefined): string {
  if (issue.code === "invalid_value" && "values" in issue) {
    return `invalid value for '${key ?? "?"}' (valid: ${issue.values.map(String).join(", ")})`;
  }
  if (issue.code === "unrecognized_keys") {
    return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${snake(k)}'`).join(", ")}`;
  }
  if (issue.code === "invalid_type") {
    return `'${key ?? "?"}' must be ${issue.expected === "record" || issue.expected === "object" ? "a table" : issue.expected === "array" ? "an array" : `a ${issue.expected}`}`;
  }
  return issue.message;
}
