import { z } from "zod";
import { findBuiltinTool } from "./tools.ts";
import { RUNTIME_KINDS } from "./runtime-kinds.ts";
import { RuntimeTemplatesSchema } from "./runtime-templates.ts";
import { AgentKeySchema, LevelSchema, ObjectNameSchema, RUN_MODES, SANDBOX_KINDS, ToolPermissionsSchema } from "./common.ts";
import { PoolsSchema } from "./pools.ts";
import { IntegrityPolicySchema, ToolIntegrityFields } from "./integrity-policy.ts";

/** A mount the admin makes reachable to sandboxes (blueprint mounts are intersected with these paths). */
export const PolicyMountSchema = z.strictObject({
  path: z.string().startsWith("/", "a mount must be an absolute path").describe("Absolute path where the volume is mounted."),
  readOnly: z.boolean().default(true).describe("Mount read-only (default)."),
  /** The volume that backs it in a cluster (a PVC or ConfigMap source); never a hostPath. */
  volume: z.record(z.string(), z.unknown()).optional()
    .describe("The Kubernetes volume source that backs it (persistentVolumeClaim, configMap, ...; never hostPath), as in a pod's volumes[]."),
}).describe("A path the admin makes mountable, and the volume behind it.");

/** The admin's sandbox floor (`[sandbox]` of config.toml) and the kind-to-runtimeClass mapping. */
export const PolicySandboxSchema = z.strictObject({
  kind: z.enum(SANDBOX_KINDS).optional().describe("The floor: every stage runs at least this strong (none < namespace < container < gvisor < microvm); a floor other than none is active and clamps the blueprint's sandbox."),
  image: z.string().min(1).optional().describe("Sandbox image; under an active floor it replaces the blueprint's (source clamped)."),
  engine: z.string().optional().describe("Accepted for upstream config.toml; ignored (kinds map to runtime classes)."),
  network: z.boolean().optional().describe("false: under an active floor every sandbox is network-isolated, whatever the blueprint asks."),
  mounts: z.array(PolicyMountSchema).optional().describe("Paths a blueprint's sandbox mounts may name under an active floor; other mounts are dropped."),
  persist: z.boolean().optional().describe("Accepted for upstream config.toml; has no effect."),
  onUnavailable: z.enum(["error", "warn"]).optional().describe("Default onUnavailable for stages that set none."),
  /** RuntimeClass per kind; a blueprint never names one itself. */
  runtimeClasses: z.strictObject({
    container: z.string().optional().describe("RuntimeClass of container sandboxes (default: the node's default runtime)."),
    gvisor: z.string().optional().describe("RuntimeClass of gvisor sandboxes (e.g. gvisor with handler runsc); required for kind gvisor."),
    microvm: z.string().optional().describe("RuntimeClass of microvm sandboxes (e.g. kata); required for kind microvm."),
  }).optional().describe("The RuntimeClass per sandbox kind; a blueprint never names one itself."),
}).describe("The admin's sandbox floor (upstream config.toml's [sandbox]) and the kind-to-RuntimeClass mapping.");
/** The admin's sandbox floor. */
export type PolicySandbox = z.infer<typeof PolicySandboxSchema>;

/** Read-path grants: global, per Agent (`namespace/name`), or every blueprint's declarations wholesale. */
export const ReadPathGrantsSchema = z.strictObject({
  global: z.array(z.string()).default([])
    .describe("Grants for every Agent that declares them (upstream's [security] read_paths); a grant opens a path only if the Agent also declares it."),
  perAgent: z.record(AgentKeySchema, z.array(z.string())).default({})
    .describe("Grants per Agent, keyed by namespace/name (upstream's [agent_read_paths.<name>]; never by a self-declared name)."),
  allowBlueprintReadPaths: z.boolean().default(false).describe("Grant every blueprint's declarations wholesale (off by default)."),
  /** Read-only volumes that back granted paths; mounted at their path in the sidecar only, never in sandboxes. */
  volumes: z.array(PolicyMountSchema).optional().describe("Volumes that back granted paths; mounted at their path in the sidecar only, never in sandbox pods."),
}).describe("Read-path grants: declared paths stay inert until granted here.");

/** One static allowlist rule (`[[allowlist]]` of policy.toml). */
export const AllowlistRuleSchema = z.strictObject({
  tool: z.string().default("").describe("The tool it applies to (empty: every tool)."),
  to: z.array(z.string()).default([]).describe("Target patterns (a URL host, a mail recipient; '*' wildcards); empty: any target."),
  channel: z.array(z.string()).default([]).describe("Channel patterns, as upstream."),
  /** Missing means public, as upstream. */
  maxSensitivity: LevelSchema.default("public").describe("The most sensitive data (public, internal, private) the rule lets through without asking; default public."),
}).describe("One allowlist rule (upstream policy.toml's [[allowlist]]).");
/** One static allowlist rule. */
export type AllowlistRuleSpec = z.infer<typeof AllowlistRuleSchema>;

/** One CEL rule over `tool`, `target`, `taint_level`; evaluated in name order. */
export const CelRuleSchema = z.strictObject({
  name: z.string().min(1).regex(/^[A-Za-z0-9_.-]+$/, "a rule name is a file stem: letters, digits, '.', '_' and '-'")
    .describe("The rule's name (a file stem upstream); rules are evaluated in name order."),
  expression: z.string().min(1).max(4096)
    .describe("A CEL expression over tool, target and taint_level returning true (allow) or false (block); an error or a non-boolean is no opinion."),
}).describe("One CEL rule (upstream's Rhai rules, in CEL).");
/** One CEL rule. */
export type CelRuleSpec = z.infer<typeof CelRuleSchema>;

/**
 * Which arguments of a tool name where a call acts (a recipient, an IBAN, a channel, a URL): the call's targets,
 * which allowlist rules (`to`, `channel`) and CEL rules (`target`, `targets`) are matched against, as for the
 * built-in mail and HTTP tools. Every value of every named argument is a target; one value that is not a string,
 * or for `url_host` not an http(s) URL, means the call has no target at all (no target-scoped rule allows it).
 */
export const ToolTargetSchema = z.strictObject({
  arguments: z.array(z.string().min(1).max(128)).min(1).max(16)
    .describe("The tool's arguments whose values are the call's targets (each a string or a list of strings), e.g. [recipient] or [recipients, cc, bcc]."),
  kind: z.enum(["value", "url_host"]).default("value")
    .describe("value: each value is a target as it is; url_host: each value is a URL and its host is the target (a value without a scheme is read as http://<value>; any scheme but http and https means no target)."),
}).describe("The arguments that name where a call of the tool acts, for allowlist and CEL rules.");
/** A declared target of a tool. */
export type ToolTargetSpec = z.infer<typeof ToolTargetSchema>;

/** A classification override (`[mcp_overrides.<tool>]`); only the set fields replace the built-in ones. */
export const ToolOverrideSchema = z.strictObject({
  sensitivity: LevelSchema.optional().describe("The label of what the tool returns (public, internal, private)."),
  direction: z.enum(["inbound", "internal", "outbound"]).optional().describe("outbound tools are gated by the taint gate."),
  clearance: LevelSchema.optional().describe("The most sensitive data the tool may carry out without the gate asking."),
  target: ToolTargetSchema.optional()
    .describe("A tool that is not built in (an MCP server's <server>__<tool>, a script tool): the arguments that name where a call acts, so allowlist and CEL rules can match it by target. Built-in tools keep their own rule."),
  ...ToolIntegrityFields,
}).describe("A classification override (upstream's [mcp_overrides.<tool>]); only the fields set replace the built-in ones.");

/** policy.toml: allowlist rules, CEL rules and classification overrides. */
export const TaintPolicySchema = z.strictObject({
  allowlist: z.array(AllowlistRuleSchema).default([]).describe("Static allowlist rules, checked before CEL rules."),
  rules: z.array(CelRuleSchema).default([]).describe("CEL rules, in name order."),
  toolOverrides: z.record(z.string().min(1), ToolOverrideSchema).default({})
    .superRefine((overrides, ctx) => {
      // A built-in's target is its own (the URL's host, the recipients): an override cannot point it elsewhere.
      for (const [tool, o] of Object.entries(overrides)) {
        if (o.target !== undefined && findBuiltinTool(tool) !== undefined) ctx.addIssue({ code: "custom", path: [tool, "target"], message: `'${tool}' is a built-in tool: its target is its own and cannot be declared` });
      }
    })
    .describe("Tool name to classification override."),
}).describe("The taint gate's policy (upstream's policy.toml): allowlist, rules, tool classification.");

/** `[security]` of config.toml. */
export const PolicySecuritySchema = z.strictObject({
  taintTracking: z.boolean().default(false).describe("Turn taint tracking on for every Run."),
  allowBlueprintPermissions: z.boolean().default(false).describe("Let a blueprint's toolPermissions loosen where the policy sets nothing (upstream's allow_blueprint_permissions)."),
  allowBlueprintSafeCommands: z.boolean().default(false).describe("Honour a blueprint's safeCommands."),
  allowSeedCommands: z.boolean().default(true).describe("Let blueprint seeds run commands (upstream's allow_seed_commands)."),
  allowLocalNetwork: z.boolean().default(false)
    .describe("Let web_fetch, http_get and http_post reach loopback, private, link-local and other local addresses (upstream's allow_local_network); off by default, checked on every address connected to."),
}).describe("Upstream config.toml's [security].");

/** `[limits]` of config.toml that the operator and sidecar use. */
export const PolicyLimitsSchema = z.strictObject({
  interactionTimeoutSeconds: z.number().int().min(0).default(3600).describe("How long a prompt waits for an answer before it is denied."),
  promptHoldSeconds: z.number().int().min(0).max(3600).optional()
    .describe("Over /mcp (2025-era revisions), how long a call waiting on a prompt is held before it is answered with a pending result naming the prompt, collected with wait_for_approval; unset: held until answered or the interaction timeout (on 2026-07-28, each leg before input_required: default 50)."),
  defaultMaxIterations: z.number().int().min(1).default(50).describe("Model turns per stage when the stage sets no max_iterations."),
  shellTimeoutSeconds: z.number().int().min(1).default(60).describe("Longest a shell command may run."),
  httpTimeoutSeconds: z.number().int().min(1).max(600).default(30).describe("Longest one request of web_fetch, http_get or http_post may take, redirects included (upstream's script_http_timeout_secs)."),
}).describe("Upstream config.toml's [limits] that the operator and sidecar use.");

/** `[safe_commands]` of config.toml: the shell commands covered without prompting (here: the ones a seed may run). */
export const PolicySafeCommandsSchema = z.strictObject({
  shell: z.array(z.string().min(1).max(1024)).max(256).default([])
    .describe("Command prefixes (upstream's [safe_commands] shell, e.g. 'git log'): a seed's command runs only when it is one of these or one followed by arguments, with no shell operator in it."),
}).describe("Upstream config.toml's [safe_commands]: the commands a blueprint's command seeds may run.");

/** Run modes allowed when the policy says nothing: the two in which every `ask` still reaches a person or is refused. */
export const DEFAULT_RUN_MODES = ["interactive", "headless"] as const;

/**
 * Ceilings on what the untrusted parties choose: the runtime image an Agent names (the runtime is trusted code:
 * it holds the granted files and the model credentials), the mode a Run asks for and its launch allows.
 */
export const PolicyCeilingsSchema = z.strictObject({
  runtimeImages: z.array(z.string().min(1).max(512)).default([])
    .describe("Runtime images an Agent may name (spec.image): an exact reference, a pattern where '*' matches any characters (registry.internal/runtimes/*), or a digest (sha256:...) that the reference must be pinned to. The controller's --runtime-image is always allowed."),
  runtimeKinds: z.array(z.enum(RUNTIME_KINDS)).default([])
    .describe("Runtime kinds an Agent may name besides the reference runtime leviath, which is always allowed (spec.runtime.kind: claude-code, codex, openai-agents, mcp-command; docs/runtimes.md). None by default."),
  runModes: z.array(z.enum(RUN_MODES)).default([...DEFAULT_RUN_MODES])
    .describe("Modes a Run may use; yolo (asks waived) and unattended (asks expire) are refused unless listed."),
  allowTools: z.boolean().default(false)
    .describe("Whether a Run may use spec.allowTools (launch allows that turn ask into allow)."),
  workspaceClaims: z.array(z.string().max(317).regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, "must be '<namespace>/<claim>'"))
    .default([])
    .describe("PersistentVolumeClaims a Run may name as its workspace (spec.workspace.claimName), each '<namespace>/<claim>'; none by default (the operator creates a claim for each Run). A claim behind a read-path volume or sandbox mount of this policy, or another Run's workspace, is refused even if listed."),
}).describe("Ceilings on what Agents and Runs choose: runtime images and kinds, run modes, launch allows, workspace claims.");
/** The ceilings on Agents' and Runs' choices. */
export type PolicyCeilings = z.infer<typeof PolicyCeilingsSchema>;

/**
 * Whether the operator checks that the cluster enforces NetworkPolicy (a probe pod pair under a deny-all
 * policy, run by the controller) and what a `network = false` Run does while that is not verified.
 */
export const NetworkEnforcementSchema = z.strictObject({
  verify: z.boolean().default(false).describe("Run the probe: at controller start, on every change of this section, and every intervalSeconds."),
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a namespace name").max(63).optional()
    .describe("Namespace the probe pods run in (one the controller may create pods and NetworkPolicies in, enforcing Pod Security restricted). Required with verify."),
  intervalSeconds: z.number().int().min(60).max(604_800).default(3600).describe("How often the probe runs again."),
  probeTimeoutSeconds: z.number().int().min(5).max(600).default(120)
    .describe("How long the probe pods may take to run (server) and to finish (clients) before the result is Unknown."),
  onUnverified: z.enum(["warn", "refuse"]).default("warn")
    .describe("While enforcement is not verified: warn (Runs start; their NetworkIsolated condition says so) or refuse (network = false Runs wait, Pending)."),
}).refine((v) => !v.verify || v.namespace !== undefined, { message: "verify needs a namespace for the probe pods", path: ["namespace"] })
  .describe("Whether the controller checks that the cluster enforces NetworkPolicy, and what network = false Runs do while it is not verified.");
/** The NetworkPolicy enforcement check, as parsed. */
export type NetworkEnforcementSpec = z.infer<typeof NetworkEnforcementSchema>;

/** An MCP server name: it prefixes its tools (`<server>__<tool>`), so it is kept to the characters a tool name may hold. */
const MCP_SERVER_NAME = /^[A-Za-z0-9_-]{1,48}$/;

/**
 * One MCP server the sidecar reaches for the run (upstream's `[[mcp_servers]]`): over streamable HTTP by `url`,
 * or over stdio by `command`, which runs in the run's sandbox (standalone: a local process confined as `shell`).
 * `${VAR}` in a header value or an env value is the sidecar's environment variable VAR standalone; in a cluster
 * it is the key VAR of the Secret `secretRef` names (docs/mcp.md); a missing one is an error, never an empty header.
 * A stdio server's env from a Secret would live in the sandbox pod, so it needs `secretEnvInSandbox` (docs/mcp.md).
 */
export const McpServerSchema = z.strictObject({
  name: z.string().regex(MCP_SERVER_NAME, "an MCP server name is 1-48 characters of A-Z a-z 0-9 _ -").describe("Prefixes the server's tools as <name>__<tool>; the key of available_connectors."),
  url: z.url({ protocol: /^https?$/ }).optional().describe("A streamable HTTP endpoint."),
  headers: z.record(z.string(), z.string()).optional().describe("HTTP headers sent to the server; ${VAR} is replaced by a variable of the Secret secretRef names."),
  command: z.string().min(1).optional().describe("A stdio server: the command run in the run's sandbox."),
  args: z.array(z.string()).optional().describe("A stdio server's arguments, passed as they are (no shell)."),
  env: z.record(z.string(), z.string()).optional().describe("A stdio server's environment; ${VAR} is replaced as in headers."),
  secretRef: z.strictObject({ name: ObjectNameSchema.describe("The Secret's name.") }).optional()
    .describe("A Secret in the Run's namespace whose keys are the ${VAR} values, labelled leviath.dev/mcp-server: <this server's name> by its owner; mounted into the sidecar container only."),
  secretEnvInSandbox: z.boolean().optional()
    .describe("A stdio server only: let ${VAR} in env put the Secret's values into the server's environment in the sandbox pod, where the model's commands can read them (sent over the exec's stdin, never its command line). Default false: such a server is refused."),
}).refine((s) => (s.url === undefined) !== (s.command === undefined), { message: "an MCP server has exactly one of url and command" })
  .refine((s) => s.secretEnvInSandbox !== true || s.command !== undefined, { message: "secretEnvInSandbox is for a stdio server (command)", path: ["secretEnvInSandbox"] });
/** One MCP server as declared. */
export type McpServer = z.infer<typeof McpServerSchema>;

/**
 * The backend of the built-in `web_search`: a tool of one of the policy's MCP servers, and how the call's
 * arguments (upstream's `query`, `count`, `freshness`) map onto the tool's. The sidecar calls it through its
 * connection to that server once the call was allowed; without this, `web_search` is offered nowhere.
 */
export const WebSearchSchema = z.strictObject({
  server: z.string().regex(MCP_SERVER_NAME, "an MCP server name is 1-48 characters of A-Z a-z 0-9 _ -").describe("The MCP server (a name of mcpServers) whose tool runs the searches."),
  tool: z.string().min(1).max(128).describe("The server's tool, by the name the server lists it under (without the <server>__ prefix)."),
  queryArgument: z.string().min(1).max(128).default("query").describe("The tool's argument that receives web_search's query (default query)."),
  countArgument: z.string().min(1).max(128).optional().describe("The tool's argument that receives web_search's count; unset: count is not sent."),
  freshnessArgument: z.string().min(1).max(128).optional().describe("The tool's argument that receives web_search's freshness, when the call gives one; unset: freshness is not sent."),
  arguments: z.record(z.string().min(1).max(128), z.union([z.string(), z.number(), z.boolean()])).default({}).describe("Fixed arguments (strings, numbers, booleans) sent with every search, beside the mapped ones: a site filter, a language, a directory."),
}).superRefine((w, ctx) => {
  const mapped = [w.queryArgument, w.countArgument, w.freshnessArgument].filter((a) => a !== undefined);
  if (new Set(mapped).size !== mapped.length) ctx.addIssue({ code: "custom", path: ["queryArgument"], message: "queryArgument, countArgument and freshnessArgument name three different arguments" });
  for (const a of mapped) if (a in w.arguments) ctx.addIssue({ code: "custom", path: ["arguments", a], message: `'${a}' is a mapped argument of web_search; a fixed argument cannot replace it` });
}).describe("The backend of web_search: an MCP server's tool and how web_search's arguments map onto it.");
/** The backend of `web_search`, as parsed. */
export type WebSearchSpec = z.infer<typeof WebSearchSchema>;

/** Why `webSearch` cannot stand beside these servers (its server is none of them), as an issue on `webSearch.server`. */
export function checkWebSearchServer(spec: { readonly webSearch?: WebSearchSpec | undefined; readonly mcpServers: readonly McpServer[] }, ctx: z.RefinementCtx): void {
  const w = spec.webSearch;
  if (w === undefined || spec.mcpServers.some((s) => s.name === w.server)) return;
  const names = spec.mcpServers.map((s) => s.name);
  ctx.addIssue({ code: "custom", path: ["webSearch", "server"], message: `'${w.server}' is not an MCP server of this policy (${names.length === 0 ? "it declares none" : `declared: ${names.join(", ")}`}); web_search calls a tool of one of mcpServers` });
}

/**
 * How a LeviathPolicy generation takes effect (docs/operations.md, "Rolling out a policy"): `enforce`, it is the
 * policy in force; `warn` and `audit`, it is a candidate every sidecar decides each call under beside the policy in
 * force, enforcing the one in force and recording each difference (`warn` also surfaces it on the Run).
 */
export const ENFORCEMENT_MODES = ["enforce", "warn", "audit"] as const;
/** A LeviathPolicy's enforcement mode. */
export type EnforcementMode = (typeof ENFORCEMENT_MODES)[number];

/** The LeviathPolicy spec: everything that is a ceiling or a grant (upstream's config.toml + policy.toml). */
export const LeviathPolicySpecSchema = z.strictObject({
  enforcement: z.enum(ENFORCEMENT_MODES).default("enforce")
    .describe("enforce: this generation is the policy in force. warn, audit: a candidate; every call is decided under it and under the policy in force (the last enforce generation), the one in force is enforced and each difference is recorded as a would-flip (warn also reports it on the Run). Loosening the mode needs the verb 'loosen' on leviathpolicies (docs/security.md)."),
  sandbox: PolicySandboxSchema.optional(),
  toolPermissions: ToolPermissionsSchema.default({}).describe("Tool permission ceilings for every Agent (upstream's [tool_permissions]); a blueprint can tighten, never loosen."),
  agentToolPermissions: z.record(AgentKeySchema, ToolPermissionsSchema).default({})
    .describe("Tool permissions per Agent, keyed by namespace/name (upstream's [agent_tool_permissions.<name>])."),
  readPaths: ReadPathGrantsSchema.default({ global: [], perAgent: {}, allowBlueprintReadPaths: false }),
  security: PolicySecuritySchema.default({
    taintTracking: false, allowBlueprintPermissions: false, allowBlueprintSafeCommands: false, allowSeedCommands: true, allowLocalNetwork: false,
  }),
  taint: TaintPolicySchema.default({ allowlist: [], rules: [], toolOverrides: {} }),
  safeCommands: PolicySafeCommandsSchema.default({ shell: [] }),
  limits: PolicyLimitsSchema.default({ interactionTimeoutSeconds: 3600, defaultMaxIterations: 50, shellTimeoutSeconds: 60, httpTimeoutSeconds: 30 }),
  ceilings: PolicyCeilingsSchema.default({ runtimeImages: [], runtimeKinds: [], runModes: [...DEFAULT_RUN_MODES], allowTools: false, workspaceClaims: [] }),
  networkEnforcement: NetworkEnforcementSchema.optional(),
  // Runtime kind mcp-command: the admin's command templates (src/api/runtime-templates.ts).
  runtimeTemplates: RuntimeTemplatesSchema,
  pools: PoolsSchema.default([]),
  mcpServers: z.array(McpServerSchema).refine((s) => new Set(s.map((x) => x.name)).size === s.length, { message: "two MCP servers have the same name" }).default([]).describe("MCP servers every Run reaches through its sidecar, each call taint-gated."),
  webSearch: WebSearchSchema.optional().describe("The backend of the built-in web_search (a tool of one of mcpServers); unset: web_search is offered nowhere."),
  integrity: IntegrityPolicySchema.default(() => IntegrityPolicySchema.parse({}))
    .describe("Integrity labels beside taint: acting calls held under an untrusted context (off by default, as upstream; docs/taint-and-permissions.md)."),
}).superRefine(checkWebSearchServer).describe("The cluster admin's grants and ceilings (upstream's config.toml and policy.toml).");
/** The LeviathPolicy spec as parsed (defaults applied). */
export type LeviathPolicySpec = z.infer<typeof LeviathPolicySpecSchema>;
/** The LeviathPolicy spec as written. */
export type LeviathPolicySpecInput = z.input<typeof LeviathPolicySpecSchema>;

/** The policy in force when no LeviathPolicy exists: upstream's defaults (nothing granted, tracking off). */
export const EMPTY_POLICY: LeviathPolicySpec = LeviathPolicySpecSchema.parse({});
