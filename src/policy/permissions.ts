// Tool permissions (taint-gate spec §5): allow / ask / deny per tool, resolved tighten-only from the
// user's ceiling, the blueprint's stage and agent maps, the built-in default and the launch flags.
// Every lookup tries all spellings of a tool, so a `bash` entry governs `shell` calls and vice versa.

import type { Permission } from "../api/common.ts";
import { BUILTIN_TOOL_LIST } from "../api/tools.ts";

/** A tool permission value: declared once, in api/common.ts, and re-exported for the policy core. */
export type { Permission };

/** Tool name (any spelling, or `"*"` for launch overrides) to permission. */
export type PermissionMap = Readonly<Record<string, Permission>>;

const RANK: Readonly<Record<Permission, number>> = { allow: 0, ask: 1, deny: 2 };

/** Alias spelling to canonical tool name. */
export const TOOL_ALIASES: ReadonlyMap<string, string> = new Map(
  BUILTIN_TOOL_LIST.flatMap((e) => (e.aliases ?? []).map((alias) => [alias, e.name] as const)),
);

/** Built-in `allow` defaults, by canonical name; everything else defaults to `ask`. */
export const DEFAULT_ALLOWED_TOOLS: ReadonlySet<string> = new Set(BUILTIN_TOOL_LIST.filter((e) => e.permission === "allow").map((e) => e.name));

/** Tools a blueprint may pre-allow even when the user has not configured them. */
const BLUEPRINT_MAY_ALLOW: ReadonlySet<string> = new Set(BUILTIN_TOOL_LIST.filter((e) => e.blueprintMayAllow === true).map((e) => e.name));

/** Parses a permission value; only the exact lower-case words are accepted. */
export function parsePermission(text: string): Permission | undefined {
  return text === "allow" || text === "ask" || text === "deny" ? text : undefined;
}

/** The canonical name of a tool (`bash` becomes `shell`). */
export function canonicalToolName(tool: string): string {
  return TOOL_ALIASES.get(tool) ?? tool;
}

/** Every spelling of a tool, the given name first: the name, its canonical form, every alias of that. */
export function toolSpellings(tool: string): readonly string[] {
  const canonical = canonicalToolName(tool);
  const out = [tool];
  if (canonical !== tool) out.push(canonical);
  for (const [alias, target] of TOOL_ALIASES) if (target === canonical && !out.includes(alias)) out.push(alias);
  return out;
}

/** The entry for a tool under any of its spellings (the called spelling wins if several are set). */
export function lookupPermission(map: PermissionMap | undefined, tool: string): Permission | undefined {
  if (map === undefined) return undefined;
  for (const spelling of toolSpellings(tool)) {
    if (Object.hasOwn(map, spelling)) return map[spelling];
  }
  return undefined;
}

/** The built-in default for a tool, matched on its canonical name. */
export function defaultPermission(tool: string): Permission {
  return DEFAULT_ALLOWED_TOOLS.has(canonicalToolName(tool)) ? "allow" : "ask";
}

/** The stricter of two permissions (`allow < ask < deny`). */
export function stricterPermission(a: Permission, b: Permission): Permission {
  return RANK[a] >= RANK[b] ? a : b;
}

/** Launch overrides: `--yolo` is `"*": allow`, `--allow X` is `X: allow`. */
export function buildLaunchOverrides(options: { readonly yolo: boolean; readonly allow: readonly string[] }): PermissionMap {
  const map: Record<string, Permission> = {};
  if (options.yolo) map["*"] = "allow";
  for (const tool of options.allow) map[tool] = "allow";
  return map;
}

/** Everything §5.2 resolves one tool's permission from. */
export interface PermissionInputs {
  readonly tool: string;
  /** The user's global `[tool_permissions]` (the LeviathPolicy's). */
  readonly userPermissions?: PermissionMap;
  /** The user's `[agent_tool_permissions.<agent>]`, overlaid on the global map key by key. */
  readonly agentUserPermissions?: PermissionMap;
  /** The blueprint's current-stage `tool_permissions`. */
  readonly blueprintStage?: PermissionMap;
  /** The blueprint's agent-level `tool_permissions`. */
  readonly blueprintAgent?: PermissionMap;
  /** `[security] allow_blueprint_permissions`. */
  readonly allowBlueprintPermissions?: boolean;
  /** `--allow` / `--yolo` overrides (see `buildLaunchOverrides`). */
  readonly launch?: PermissionMap;
}

/** Where the resolved permission came from, for messages and metrics. */
export type PermissionSource = "default" | "ceiling" | "blueprint" | "blueprint-clamped" | "launch";

/** A resolved permission and its source. */
export interface ResolvedPermission {
  readonly permission: Permission;
  readonly source: PermissionSource;
}

function ceilingFor(inputs: PermissionInputs): Permission | undefined {
  // Overlaid key by key first, then looked up by spelling: an agent's `bash` entry replaces only a global
  // `bash` entry, never a global `shell` one.
  return lookupPermission({ ...inputs.userPermissions, ...inputs.agentUserPermissions }, inputs.tool);
}

function configuredFor(inputs: PermissionInputs): ResolvedPermission {
  const ceiling = ceilingFor(inputs);
  const blueprint = lookupPermission(inputs.blueprintStage, inputs.tool) ?? lookupPermission(inputs.blueprintAgent, inputs.tool);
  if (blueprint !== undefined && ceiling !== undefined) {
    return { permission: stricterPermission(blueprint, ceiling), source: "blueprint-clamped" };
  }
  if (blueprint !== undefined) {
    const mayLoosen = inputs.allowBlueprintPermissions === true || toolSpellings(inputs.tool).some((s) => BLUEPRINT_MAY_ALLOW.has(s));
    if (mayLoosen) return { permission: blueprint, source: "blueprint" };
    return { permission: stricterPermission(blueprint, defaultPermission(inputs.tool)), source: "blueprint-clamped" };
  }
  if (ceiling !== undefined) return { permission: ceiling, source: "ceiling" };
  return { permission: defaultPermission(inputs.tool), source: "default" };
}

/** Resolves one call's permission, tighten-only; a configured `deny` is terminal (no launch flag lifts it). */
export function resolveToolPermission(inputs: PermissionInputs): ResolvedPermission {
  const configured = configuredFor(inputs);
  if (configured.permission === "deny") return configured;
  const launch = lookupPermission(inputs.launch, inputs.tool) ?? inputs.launch?.["*"];
  return launch === undefined ? configured : { permission: launch, source: "launch" };
}

/** The tool result for a call refused by `deny`. */
export function buildPermissionDeniedMessage(tool: string): string {
  return `[denied] Tool '${tool}' is not permitted.`;
}

/** The tool result for a call whose approval was declined or expired. */
export function buildUserDeclinedMessage(tool: string): string {
  return `[denied] User declined tool call '${tool}'.`;
}
