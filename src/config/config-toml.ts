import { buildAgentKey, ObjectNameSchema } from "../api/common.ts";
import { findNearestName } from "../policy/nearest-name.ts";
import type { LeviathPolicySpecInput } from "../api/leviath-policy.ts";
import type { LoadIssue } from "./load-error.ts";
import { mapMcpServers } from "./mcp-servers-toml.ts";
import { parseMountText } from "./mount-text.ts";
import { mapWebSearch } from "./web-search-toml.ts";
import { UPSTREAM_CONFIG_KEYS } from "./upstream-config-keys.ts";
import { INTEGRITY_OVERRIDE_KEYS, mapIntegrityToml, pickIntegrityOverride } from "./integrity-toml.ts";
import { isTable, locateTomlLine, tomlTable, type TomlDoc } from "./toml-source.ts";

/** What config.toml and policy.toml contribute, before the schema checks types. */
export type PolicyDraft = LeviathPolicySpecInput & Record<string, unknown>;

const KNOWN_TOP = ["taint_tracking", "security", "sandbox", "tool_permissions", "agent_tool_permissions", "agent_read_paths", "limits", "mcp_servers", "safe_commands", "web_search"];
/** The keys of `[sandbox]`, as upstream defines them. */
const SANDBOX_KEYS = ["kind", "image", "engine", "network", "mounts", "persist", "on_unavailable"];
const SECURITY_MAPPED: Record<string, string> = {
  allow_blueprint_permissions: "allowBlueprintPermissions",
  allow_blueprint_safe_commands: "allowBlueprintSafeCommands",
  allow_seed_commands: "allowSeedCommands",
  allow_local_network: "allowLocalNetwork",
};
/** The keys of `[security]` the operator carries. */
const SECURITY_CARRIED = ["read_paths", "allow_blueprint_read_paths", "taint_tracking", ...Object.keys(SECURITY_MAPPED)];
const LIMITS_MAPPED: Record<string, string> = {
  interaction_timeout_secs: "interactionTimeoutSeconds",
  default_max_iterations: "defaultMaxIterations",
  script_shell_timeout_secs: "shellTimeoutSeconds",
  script_http_timeout_secs: "httpTimeoutSeconds",
  // Leviath's own (upstream has none): how long /mcp holds a call on a prompt before a pending answer.
  prompt_hold_secs: "promptHoldSeconds",
};

function issueAt(doc: TomlDoc, table: string[], key: string | undefined, message: string): LoadIssue {
  const line = locateTomlLine(doc, table, key);
  const head = table.length === 0 ? "" : tomlTable(table);
  const where = key === undefined ? head : head === "" ? key : `${head} ${key}`;
  return { file: doc.file, where, message, ...(line ? { line } : {}) };
}

/** An upstream key the operator has no use for: a warning that `formatWarnings` folds into one block. */
function unusedAt(doc: TomlDoc, table: string[], key: string): LoadIssue {
  return { ...issueAt(doc, table, key, "not used by the operator; ignored"), unused: { table: table.length === 0 ? "" : tomlTable(table), key } };
}

interface Sink {
  doc: TomlDoc;
  issues: LoadIssue[];
  warnings: LoadIssue[];
}

/**
 * A key the operator does not carry. Upstream's own is a warning, folded into one block; one upstream does not define
 * and close to a key the operator carries is a typo that would leave that setting unset without a word, so it is
 * refused naming the key it is close to. Any other is a warning too, as upstream warns about a key nothing reads.
 */
function reportUncarried(sink: Sink, table: keyof typeof UPSTREAM_CONFIG_KEYS, key: string, carried: readonly string[]): void {
  const path = table === "" ? [] : [table];
  const upstream = UPSTREAM_CONFIG_KEYS[table];
  const nearest = upstream.includes(key) ? undefined : findNearestName(key, [...carried, ...upstream]);
  if (nearest === undefined || !carried.includes(nearest)) {
    sink.warnings.push(unusedAt(sink.doc, path, key));
    return;
  }
  const unknown = table === "" ? "unknown key" : `[${table}] has unknown key '${key}'`;
  sink.issues.push(issueAt(sink.doc, path, key, `${unknown} (did you mean '${nearest}'?): a misspelt key would leave that setting unset`));
}

function mapSecurity(sink: Sink, sec: Record<string, unknown>, security: Record<string, unknown>, readPaths: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(sec)) {
    if (k === "read_paths") readPaths["global"] = v;
    else if (k === "allow_blueprint_read_paths") readPaths["allowBlueprintReadPaths"] = v;
    else if (k === "taint_tracking") security["taintTracking"] = v;
    else if (SECURITY_MAPPED[k]) security[SECURITY_MAPPED[k]] = v;
    else reportUncarried(sink, "security", k, SECURITY_CARRIED);
  }
}

function mapAgentReadPaths(sink: Sink, arp: Record<string, unknown>, namespace: string): Record<string, unknown> {
  const perAgent: Record<string, unknown> = {};
  for (const [name, table] of Object.entries(arp)) {
    if (!isTable(table)) {
      sink.issues.push(issueAt(sink.doc, ["agent_read_paths", name], undefined, `[agent_read_paths.${name}] must be a table with allow = [...]`));
      continue;
    }
    for (const k of Object.keys(table)) {
      if (k !== "allow") sink.issues.push(issueAt(sink.doc, ["agent_read_paths", name], k, `[agent_read_paths.${name}] has unknown key '${k}' (valid: allow)`));
    }
    // Upstream matches the table name exactly: a name no Agent can carry is kept (it grants nothing), not refused.
    if (!ObjectNameSchema.safeParse(name).success) {
      sink.warnings.push(issueAt(sink.doc, ["agent_read_paths", name], undefined, `names no Kubernetes Agent ('${name}' is not a lower-case DNS name): keys match exactly, so it grants nothing but to a blueprint named '${name}'`));
    }
    perAgent[buildAgentKey(namespace, name)] = table["allow"] ?? [];
  }
  return perAgent;
}

function mapSandboxFloor(sink: Sink, sb: Record<string, unknown>): Record<string, unknown> {
  const sandbox: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(sb)) {
    if (k === "mounts" || k === "mount") sandbox["mounts"] = Array.isArray(v) ? v.map((p) => (typeof p === "string" ? parseMountText(p) : { path: p })) : v;
    else if (["kind", "image", "engine", "network", "persist"].includes(k)) sandbox[k] = v;
    else if (k === "on_unavailable") sandbox["onUnavailable"] = v;
    else {
      const nearest = findNearestName(k, SANDBOX_KEYS);
      sink.issues.push(issueAt(sink.doc, ["sandbox"], k, `[sandbox] has unknown key '${k}'${nearest ? ` (did you mean '${nearest}'?)` : ""} (valid: ${SANDBOX_KEYS.join(", ")})`));
    }
  }
  return sandbox;
}

function mapLimits(sink: Sink, lim: Record<string, unknown>): Record<string, unknown> {
  const limits: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(lim)) {
    if (LIMITS_MAPPED[k]) limits[LIMITS_MAPPED[k]] = v;
    else reportUncarried(sink, "limits", k, Object.keys(LIMITS_MAPPED));
  }
  return limits;
}

function mapSafeCommands(sink: Sink, sc: Record<string, unknown>): Record<string, unknown> {
  for (const k of Object.keys(sc)) if (k !== "shell") reportUncarried(sink, "safe_commands", k, ["shell"]);
  return "shell" in sc ? { shell: sc["shell"] } : {};
}

/**
 * Map upstream `config.toml` onto a LeviathPolicy draft. Per-agent tables are keyed by the blueprint's name
 * upstream; here they become `namespace/name` with the namespace given. Keys the operator does not use are
 * warnings, as upstream warns rather than fails on a stale config key.
 */
export function mapConfigToml(doc: TomlDoc, namespace: string): { draft: PolicyDraft; issues: LoadIssue[]; warnings: LoadIssue[] } {
  const sink: Sink = { doc, issues: [], warnings: [] };
  const d = doc.data;
  for (const key of Object.keys(d)) {
    if (!KNOWN_TOP.includes(key)) reportUncarried(sink, "", key, KNOWN_TOP);
  }
  // In this order: the draft's keys keep the order the policy is printed in.
  const draft: PolicyDraft = { ...mapSecurityTables(sink, d, namespace), ...mapPolicyTables(sink, d, namespace) };
  return { draft, issues: sink.issues, warnings: sink.warnings };
}

/** `taint_tracking`, `[security]` and `[agent_read_paths]`: the draft's `readPaths` and `security`, each only when it holds something. */
function mapSecurityTables(sink: Sink, d: Record<string, unknown>, namespace: string): Pick<PolicyDraft, "readPaths" | "security"> {
  const draft: PolicyDraft = {};
  const security: Record<string, unknown> = {};
  const readPaths: Record<string, unknown> = {};
  if ("taint_tracking" in d) security["taintTracking"] = d["taint_tracking"];
  const sec = d["security"];
  if (sec !== undefined && !isTable(sec)) sink.issues.push(issueAt(sink.doc, [], "security", "[security] must be a table"));
  if (isTable(sec)) mapSecurity(sink, sec, security, readPaths);
  const arp = d["agent_read_paths"];
  if (isTable(arp)) {
    const perAgent = mapAgentReadPaths(sink, arp, namespace);
    if (Object.keys(perAgent).length > 0) readPaths["perAgent"] = perAgent;
  }
  if (Object.keys(readPaths).length > 0) draft.readPaths = readPaths as PolicyDraft["readPaths"];
  if (Object.keys(security).length > 0) draft.security = security as PolicyDraft["security"];
  return draft;
}

/** The permission, sandbox, limit, safe-command and MCP tables. */
function mapPolicyTables(sink: Sink, d: Record<string, unknown>, namespace: string): PolicyDraft {
  const draft: PolicyDraft = {};
  if ("tool_permissions" in d) draft.toolPermissions = d["tool_permissions"] as PolicyDraft["toolPermissions"];
  const atp = d["agent_tool_permissions"];
  if (isTable(atp)) {
    draft.agentToolPermissions = Object.fromEntries(Object.entries(atp).map(([n, v]) => [buildAgentKey(namespace, n), v])) as PolicyDraft["agentToolPermissions"];
  }
  if (isTable(d["sandbox"])) draft.sandbox = mapSandboxFloor(sink, d["sandbox"]) as PolicyDraft["sandbox"];
  if (isTable(d["limits"])) draft.limits = mapLimits(sink, d["limits"]) as PolicyDraft["limits"];
  if (isTable(d["safe_commands"])) draft.safeCommands = mapSafeCommands(sink, d["safe_commands"]) as PolicyDraft["safeCommands"];
  if ("mcp_servers" in d) {
    const mcp = mapMcpServers(sink.doc, d["mcp_servers"]);
    sink.issues.push(...mcp.issues);
    draft.mcpServers = mcp.servers as PolicyDraft["mcpServers"];
  }
  if ("web_search" in d) {
    const ws = mapWebSearch(sink.doc, d["web_search"]);
    sink.issues.push(...ws.issues);
    draft.webSearch = ws.webSearch as PolicyDraft["webSearch"];
  }
  return draft;
}

/**
 * Map upstream `policy.toml` (`[[allowlist]]`, `[mcp_overrides]`) onto the draft's `taint` section.
 * Overrides accept the flat form (`[mcp_overrides.<dispatched name>]`) and the nested one
 * (`[mcp_overrides.<server>.tools.<tool>]`, keyed `server__tool` after sanitising, as newer upstream).
 */
export function mapPolicyToml(doc: TomlDoc, sanitize: (server: string, tool: string) => string): { taint: Record<string, unknown>; integrity?: Record<string, unknown> | undefined; issues: LoadIssue[]; warnings: LoadIssue[] } {
  const warnings: LoadIssue[] = [];
  const d = doc.data;
  const taint: Record<string, unknown> = {};
  // `[integrity]` is ours (issue 40): upstream's files never have it.
  const { integrity, issues } = mapIntegrityToml(doc, (table, key, message) => issueAt(doc, table, key, message));
  for (const key of Object.keys(d)) {
    if (key !== "allowlist" && key !== "mcp_overrides" && key !== "integrity") warnings.push(issueAt(doc, [], key, "is not part of policy.toml; ignored"));
  }
  const allow = d["allowlist"];
  if (allow !== undefined && !Array.isArray(allow)) issues.push(issueAt(doc, [], "allowlist", "'allowlist' must be an array of [[allowlist]] tables"));
  if (Array.isArray(allow)) {
    taint["allowlist"] = allow.map((rule: unknown, i) => {
      if (!isTable(rule)) {
        issues.push(issueAt(doc, ["allowlist"], undefined, `[[allowlist]] #${i + 1} must be a table`));
        return {};
      }
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(rule)) {
        if (k === "max_sensitivity") {
          const level = typeof v === "string" ? v.toLowerCase() : "";
          // Upstream reads an unreadable level as public, the narrowest; say so rather than stay silent.
          if (!["public", "internal", "private"].includes(level)) {
            warnings.push(issueAt(doc, ["allowlist"], k, `[[allowlist]] #${i + 1} max_sensitivity ${JSON.stringify(v)} is not a level; using public`));
            out["maxSensitivity"] = "public";
          } else out["maxSensitivity"] = level;
        } else if (["tool", "to", "channel"].includes(k)) out[k] = v;
        else issues.push(issueAt(doc, ["allowlist"], k, `[[allowlist]] #${i + 1} has unknown key '${k}' (valid: tool, to, channel, max_sensitivity)`));
      }
      return out;
    });
  }
  const ov = d["mcp_overrides"];
  if (isTable(ov)) {
    const overrides: Record<string, unknown> = {};
    for (const [name, entry] of Object.entries(ov)) {
      if (!isTable(entry)) continue;
      const tools = entry["tools"];
      if (isTable(tools)) {
        for (const [tool, fields] of Object.entries(tools)) {
          if (isTable(fields)) overrides[sanitize(name, tool)] = pickOverride(doc, ["mcp_overrides", name, "tools", tool], fields, warnings);
        }
      } else if (["sensitivity", "direction", "clearance", "target", ...Object.keys(INTEGRITY_OVERRIDE_KEYS)].some((k) => k in entry)) {
        overrides[name] = pickOverride(doc, ["mcp_overrides", name], entry, warnings);
      }
    }
    taint["toolOverrides"] = overrides;
  }
  return { taint, integrity, issues, warnings };
}

function pickOverride(doc: TomlDoc, table: string[], fields: Record<string, unknown>, warnings: LoadIssue[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ["sensitivity", "clearance"]) {
    const v = fields[k];
    if (v === undefined) continue;
    const level = typeof v === "string" ? v.toLowerCase() : "";
    if (["public", "internal", "private"].includes(level)) out[k] = level;
    else warnings.push(issueAt(doc, table, k, `${k} ${JSON.stringify(v)} is not a level; left unset`));
  }
  const dir = fields["direction"];
  if (dir !== undefined) {
    if (typeof dir === "string" && ["inbound", "internal", "outbound"].includes(dir)) out["direction"] = dir;
    else warnings.push(issueAt(doc, table, "direction", `direction ${JSON.stringify(dir)} is not inbound, internal or outbound; the tool keeps its direction`));
  }
  if ("target" in fields) out["target"] = mapTarget(fields["target"]);
  return { ...out, ...pickIntegrityOverride(fields) };
}

/**
 * A tool's `target`: `target = "recipient"` and `target = ["recipients", "cc"]` are short for `{ arguments = [...] }`;
 * a table is taken as it is (`arguments`, `kind`). Not upstream's: the schema checks every form and names the field.
 */
function mapTarget(target: unknown): unknown {
  if (typeof target === "string") return { arguments: [target] };
  if (Array.isArray(target)) return { arguments: target };
  return target;
}
