import { z } from "zod";
import { AgentKeySchema, LevelSchema, RUN_MODES, SANDBOX_KINDS, ToolPermissionsSchema } from "./common.ts";

/** A mount the admin makes reachable to sandboxes (blueprint mounts are intersected with these paths). */
export const PolicyMountSchema = z.strictObject({
  path: z.string().startsWith("/", "a mount must be an absolute path"),
  readOnly: z.boolean().default(true),
  /** The volume that backs it in a cluster (a PVC or ConfigMap source); never a hostPath. */
  volume: z.record(z.string(), z.unknown()).optional(),
});

/** The admin's sandbox floor (`[sandbox]` of config.toml) and the kind-to-runtimeClass mapping. */
export const PolicySandboxSchema = z.strictObject({
  kind: z.enum(SANDBOX_KINDS).optional(),
  image: z.string().min(1).optional(),
  engine: z.string().optional(),
  network: z.boolean().optional(),
  mounts: z.array(PolicyMountSchema).optional(),
  persist: z.boolean().optional(),
  onUnavailable: z.enum(["error", "warn"]).optional(),
  /** RuntimeClass per kind; a blueprint never names one itself. */
  runtimeClasses: z.strictObject({
    container: z.string().optional(),
    gvisor: z.string().optional(),
    microvm: z.string().optional(),
  }).optional(),
});
/** The admin's sandbox floor. */
export type PolicySandbox = z.infer<typeof PolicySandboxSchema>;

/** Read-path grants: global, per Agent (`namespace/name`), or every blueprint's declarations wholesale. */
export const ReadPathGrantsSchema = z.strictObject({
  global: z.array(z.string()).default([]),
  perAgent: z.record(AgentKeySchema, z.array(z.string())).default({}),
  allowBlueprintReadPaths: z.boolean().default(false),
  /** Read-only volumes that back granted paths; mounted at their path in the sidecar only, never in sandboxes. */
  volumes: z.array(PolicyMountSchema).optional(),
});

/** One static allowlist rule (`[[allowlist]]` of policy.toml). */
export const AllowlistRuleSchema = z.strictObject({
  tool: z.string().default(""),
  to: z.array(z.string()).default([]),
  channel: z.array(z.string()).default([]),
  /** Missing means public, as upstream. */
  maxSensitivity: LevelSchema.default("public"),
});
/** One static allowlist rule. */
export type AllowlistRuleSpec = z.infer<typeof AllowlistRuleSchema>;

/** One CEL rule over `tool`, `target`, `taint_level`; evaluated in name order. */
export const CelRuleSchema = z.strictObject({
  name: z.string().min(1).regex(/^[A-Za-z0-9_.-]+$/, "a rule name is a file stem: letters, digits, '.', '_' and '-'"),
  expression: z.string().min(1).max(4096),
});
/** One CEL rule. */
export type CelRuleSpec = z.infer<typeof CelRuleSchema>;

/** A classification override (`[mcp_overrides.<tool>]`); only the set fields replace the built-in ones. */
export const ToolOverrideSchema = z.strictObject({
  sensitivity: LevelSchema.optional(),
  direction: z.enum(["inbound", "internal", "outbound"]).optional(),
  clearance: LevelSchema.optional(),
});

/** policy.toml: allowlist rules, CEL rules and classification overrides. */
export const TaintPolicySchema = z.strictObject({
  allowlist: z.array(AllowlistRuleSchema).default([]),
  rules: z.array(CelRuleSchema).default([]),
  toolOverrides: z.record(z.string().min(1), ToolOverrideSchema).default({}),
});

/** `[security]` of config.toml. */
export const PolicySecuritySchema = z.strictObject({
  taintTracking: z.boolean().default(false),
  allowBlueprintPermissions: z.boolean().default(false),
  allowBlueprintSafeCommands: z.boolean().default(false),
  allowSeedCommands: z.boolean().default(true),
});

/** `[limits]` of config.toml that the operator and sidecar use. */
export const PolicyLimitsSchema = z.strictObject({
  interactionTimeoutSeconds: z.number().int().min(0).default(3600),
  defaultMaxIterations: z.number().int().min(1).default(50),
  shellTimeoutSeconds: z.number().int().min(1).default(60),
});

/** Run modes allowed when the policy says nothing: the two in which every `ask` still reaches a person or is refused. */
export const DEFAULT_RUN_MODES = ["interactive", "headless"] as const;

/**
 * Ceilings on what the untrusted parties choose: the runtime image an Agent names (the runtime is trusted code:
 * it holds the granted files and the model credentials), the mode a Run asks for and its launch allows.
 */
export const PolicyCeilingsSchema = z.strictObject({
  runtimeImages: z.array(z.string().min(1).max(512)).default([])
    .describe("Runtime images an Agent may name (spec.image): an exact reference, a pattern where '*' matches any characters (registry.internal/runtimes/*), or a digest (sha256:...) that the reference must be pinned to. The controller's --runtime-image is always allowed."),
  runModes: z.array(z.enum(RUN_MODES)).default([...DEFAULT_RUN_MODES])
    .describe("Modes a Run may use; yolo (asks waived) and unattended (asks expire) are refused unless listed."),
  allowTools: z.boolean().default(false)
    .describe("Whether a Run may use spec.allowTools (launch allows that turn ask into allow)."),
});
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
}).refine((v) => !v.verify || v.namespace !== undefined, { message: "verify needs a namespace for the probe pods", path: ["namespace"] });
/** The NetworkPolicy enforcement check, as parsed. */
export type NetworkEnforcementSpec = z.infer<typeof NetworkEnforcementSchema>;

/** An MCP server name: it prefixes its tools (`<server>__<tool>`), so it is kept to the characters a tool name may hold. */
const MCP_SERVER_NAME = /^[A-Za-z0-9_-]{1,48}$/;

/**
 * One MCP server the sidecar reaches for the run (upstream's `[[mcp_servers]]`): over streamable HTTP by `url`,
 * or over stdio by `command`, which runs in the run's sandbox (standalone: a local process confined as `shell`).
 * `${VAR}` in a header value or an env value is the sidecar's environment variable VAR (in a cluster, filled
 * from the Secret `secretRef` names); a missing variable is an error, never an empty header.
 */
export const McpServerSchema = z.strictObject({
  name: z.string().regex(MCP_SERVER_NAME, "an MCP server name is 1-48 characters of A-Z a-z 0-9 _ -").describe("Prefixes the server's tools as <name>__<tool>; the key of available_connectors."),
  url: z.url({ protocol: /^https?$/ }).optional().describe("A streamable HTTP endpoint."),
  headers: z.record(z.string(), z.string()).optional().describe("HTTP headers sent to the server; ${VAR} is replaced by a variable of the Secret secretRef names."),
  command: z.string().min(1).optional().describe("A stdio server: the command run in the run's sandbox."),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  secretRef: z.strictObject({ name: z.string().min(1) }).optional().describe("A Secret in the Run's namespace whose keys are the ${VAR} values."),
}).refine((s) => (s.url === undefined) !== (s.command === undefined), { message: "an MCP server has exactly one of url and command" });
/** One MCP server as declared. */
export type McpServer = z.infer<typeof McpServerSchema>;

/** The LeviathPolicy spec: everything that is a ceiling or a grant (upstream's config.toml + policy.toml). */
export const LeviathPolicySpecSchema = z.strictObject({
  sandbox: PolicySandboxSchema.optional(),
  toolPermissions: ToolPermissionsSchema.default({}),
  agentToolPermissions: z.record(AgentKeySchema, ToolPermissionsSchema).default({}),
  readPaths: ReadPathGrantsSchema.default({ global: [], perAgent: {}, allowBlueprintReadPaths: false }),
  security: PolicySecuritySchema.default({
    taintTracking: false, allowBlueprintPermissions: false, allowBlueprintSafeCommands: false, allowSeedCommands: true,
  }),
  taint: TaintPolicySchema.default({ allowlist: [], rules: [], toolOverrides: {} }),
  limits: PolicyLimitsSchema.default({ interactionTimeoutSeconds: 3600, defaultMaxIterations: 50, shellTimeoutSeconds: 60 }),
  ceilings: PolicyCeilingsSchema.default({ runtimeImages: [], runModes: [...DEFAULT_RUN_MODES], allowTools: false }),
  networkEnforcement: NetworkEnforcementSchema.optional(),
  mcpServers: z.array(McpServerSchema).refine((s) => new Set(s.map((x) => x.name)).size === s.length, { message: "two MCP servers have the same name" }).default([]).describe("MCP servers every Run reaches through its sidecar, each call taint-gated."),
});
/** The LeviathPolicy spec as parsed (defaults applied). */
export type LeviathPolicySpec = z.infer<typeof LeviathPolicySpecSchema>;
/** The LeviathPolicy spec as written. */
export type LeviathPolicySpecInput = z.input<typeof LeviathPolicySpecSchema>;

/** The policy in force when no LeviathPolicy exists: upstream's defaults (nothing granted, tracking off). */
export const EMPTY_POLICY: LeviathPolicySpec = LeviathPolicySpecSchema.parse({});
