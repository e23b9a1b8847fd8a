// What one call is decided from, taken from the run policy and the call: the permission maps, the tool's
// arguments (upstream's names, checked before any decision), its class for metrics and its grant key.
import { BUILTIN_TOOLS, findBuiltinTool, listToolSpellings } from "../../api/tools.ts";
import type { RunPolicy } from "../../api/run-policy.ts";
import type { ToolClassLabel } from "../../metrics/sidecar-metrics.ts";
import { classifyBuiltinTool } from "../../policy/classification.ts";
import { buildLaunchOverrides, canonicalToolName, type PermissionInputs } from "../../policy/permissions.ts";
import type { RunStage } from "../executors/shell.ts";
import type { ToolGateway } from "./tool-gateway.ts";
import type { WebSearchSpec } from "../../api/leviath-policy.ts";
import { isSearchBacked } from "../executors/web-search.ts";

/** Tools the sidecar runs in the stage's sandbox (any spelling). */
export const SHELL_TOOLS: ReadonlySet<string> = new Set(listToolSpellings((e) => e.executor === "shell"));

/** The built-ins the sidecar settles itself (executes, or stores as the result): every other tool is the runtime's to run. */
export const SIDECAR_BUILTIN_TOOLS: ReadonlySet<string> = new Set(listToolSpellings((e) => e.executor !== "runtime"));

/** Whether the sidecar settles a call of this tool itself (a built-in above, or a tool of an admin's MCP server). */
export function isSettledBySidecar(tool: string, gateway?: ToolGateway): boolean {
  return SIDECAR_BUILTIN_TOOLS.has(tool) || gateway?.find(tool) !== undefined;
}

/** `shell {command}`. */
export const ShellArgsSchema = BUILTIN_TOOLS.shell.args;

/** The permission maps of a call in a stage (the tool is added by the caller). */
export function buildPermissionInputs(policy: RunPolicy, stage: RunStage): Omit<PermissionInputs, "tool"> {
  return {
    userPermissions: policy.toolPermissions.ceiling,
    blueprintAgent: policy.toolPermissions.blueprint,
    ...(stage.toolPermissions ? { blueprintStage: stage.toolPermissions } : {}),
    allowBlueprintPermissions: policy.toolPermissions.allowBlueprintPermissions,
    // The yolo wildcard is added by decideToolCall from the mode.
    launch: buildLaunchOverrides({ yolo: false, allow: policy.launch.allow }),
  };
}

/** An MCP tool's dispatched name: `sanitize(server + "__" + tool)`, at most 64 bytes of `[A-Za-z0-9_-]`. */
const MCP_TOOL_NAME = /^[A-Za-z0-9_-]+__[A-Za-z0-9_-]+$/;

/** What the run offers beside a stage's own lists (Enforcement holds both). */
export interface ToolOffer {
  /** The names a stage without a tool list offers. */
  readonly offeredTools: ReadonlySet<string>;
  /** The run policy's backend of web_search (absent: it is offered nowhere). */
  readonly runPolicy: { readonly webSearch?: WebSearchSpec | undefined };
}

/** web_search exists only where the policy names a backend and its server lists the tool; every other tool needs none. */
function hasBackend(offer: ToolOffer, tool: string, gateway: ToolGateway | undefined): boolean {
  return findBuiltinTool(tool)?.executor !== "search" || isSearchBacked(offer.runPolicy.webSearch, gateway);
}

/**
 * Whether the stage offers the tool, by exact name: one its `available_tools`/`required_tools` list or a tool
 * of a server its `available_connectors` names, or, when it lists no tools, a name the run offers (`offered`)
 * or an MCP-shaped `server__tool` name. A name in a gateway server's namespace is offered only if that server
 * listed it at start (a later listing never adds one). `web_search` needs its backend as well.
 */
export function isToolOffered(stage: RunStage, offer: ToolOffer, tool: string, gateway?: ToolGateway): boolean {
  if (!hasBackend(offer, tool, gateway)) return false;
  const offered = offer.offeredTools;
  const fromGateway = gateway?.find(tool);
  if (gateway?.claims(tool) === true && fromGateway === undefined) return false;
  if (fromGateway !== undefined && (stage.availableConnectors ?? []).includes(fromGateway.server)) return true;
  if (stage.availableTools !== undefined) return stage.availableTools.includes(tool) || (stage.requiredTools ?? []).includes(tool);
  return offered.has(tool) || (tool.length <= 64 && MCP_TOOL_NAME.test(tool));
}

/**
 * The arguments checked against the tool's schema: file tools, shell, web_search and the HTTP tools (whose `url` becomes the
 * normalised href that is decided on and fetched); tools the runtime executes take any object, and so does
 * `submit_output` (an output that is not a string is stored as its JSON, see extractOutput).
 */
export function parseToolArgs(tool: string, args: Record<string, unknown>): { ok: true; value: Record<string, unknown> } | { ok: false; detail: string } {
  const entry = findBuiltinTool(tool);
  const schema = entry?.executor === "file" || entry?.executor === "shell" || entry?.executor === "http" || entry?.executor === "search" ? entry.args : undefined;
  if (schema === undefined) return { ok: true, value: args };
  const parsed = schema.safeParse(args);
  if (parsed.success) return { ok: true, value: parsed.data as Record<string, unknown> };
  const issue = parsed.error.issues[0];
  return { ok: false, detail: issue === undefined ? "invalid" : `${issue.path.join(".") || "arguments"}: ${issue.message}` };
}

/** The metric class of a tool: its entry's (file tools and shell), else its built-in direction. */
export function computeToolClass(tool: string): ToolClassLabel {
  return findBuiltinTool(tool)?.metricClass ?? classifyBuiltinTool(tool).direction;
}

/**
 * What an "allow for this stage/run" answer covers: the tool (any spelling), and for shell the exact command
 * line (stricter than upstream's per-command keys: a grant for `ls` never covers `ls; rm -rf .`).
 */
export function buildGrantKey(tool: string, args: Record<string, unknown>): string {
  const canonical = canonicalToolName(tool);
  return canonical === "shell" ? `shell\u0000${String(args["command"])}` : canonical;
}
