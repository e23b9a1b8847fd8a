import { z } from "zod";
import { PermissionSchema, RUN_MODES, SANDBOX_KINDS, ToolPermissionsSchema } from "./common.ts";
import { IntegrityPolicySchema } from "./integrity-policy.ts";
import { AllowlistRuleSchema, CelRuleSchema, checkWebSearchServer, McpServerSchema, ToolOverrideSchema, WebSearchSchema } from "./leviath-policy.ts";

export { RUN_MODES, type RunMode } from "./common.ts";

/** A stage's sandbox after the tighten-only merge. */
export const ResolvedSandboxSchema = z.strictObject({
  kind: z.enum(SANDBOX_KINDS),
  image: z.string().optional(),
  network: z.boolean(),
  mounts: z.array(z.string()),
  persist: z.boolean(),
  onUnavailable: z.enum(["error", "warn"]),
  runtimeClassName: z.string().optional(),
  source: z.enum(["blueprint", "policy", "clamped", "default"]),
});

/** One stage as the sidecar enforces it. */
export const RunStageSchema = z.strictObject({
  name: z.string().min(1),
  availableTools: z.array(z.string()).optional(),
  availableConnectors: z.array(z.string()).optional(),
  requiredTools: z.array(z.string()).optional(),
  toolPermissions: ToolPermissionsSchema.optional(),
  sandbox: ResolvedSandboxSchema,
  /**
   * The stage's outgoing edges as the runtime follows them (`runtime.transitions` of the Agent's stage): the MCP
   * front-end offers `next_stage` over the `llm_choice` ones. Absent: the stage falls through; empty: terminal.
   */
  transitions: z.array(z.strictObject({ to: z.string().min(1), condition: z.string().min(1), hint: z.string() })).optional(),
});

/**
 * The resolved policy of one run: everything the sidecar decides with, computed once by the controller (or by
 * `leviath sidecar` standalone) from the Agent and the LeviathPolicy, and pinned to their generations.
 */
export const RunPolicySchema = z.strictObject({
  agent: z.strictObject({
    key: z.string().min(1),
    name: z.string().min(1),
    version: z.string().optional(),
  }),
  stages: z.array(RunStageSchema).min(1),
  entryStage: z.string().min(1),
  launch: z.strictObject({
    mode: z.enum(RUN_MODES),
    allow: z.array(z.string()).default([]),
  }),
  toolPermissions: z.strictObject({
    /** Agent-level blueprint requests (stage maps live on each stage). */
    blueprint: ToolPermissionsSchema,
    /** The admin's ceiling with this agent's own table overlaid key by key. */
    ceiling: ToolPermissionsSchema,
    allowBlueprintPermissions: z.boolean(),
  }),
  readPaths: z.strictObject({
    declared: z.array(z.string()),
    granted: z.array(z.string()),
    allowBlueprintReadPaths: z.boolean(),
    /** Set on a resumed run's snapshot: the grants were re-resolved (the `sequence`-th time) against this policy generation. */
    resumed: z.strictObject({ sequence: z.number().int().min(1), policyGeneration: z.number().int().min(0).optional() }).optional(),
  }),
  taint: z.strictObject({
    tracking: z.boolean(),
    allowlist: z.array(AllowlistRuleSchema),
    rules: z.array(CelRuleSchema),
    toolOverrides: z.record(z.string(), ToolOverrideSchema),
  }),
  /** Integrity labels and holds (absent: an older snapshot, nothing enforced). */
  integrity: IntegrityPolicySchema.default(() => IntegrityPolicySchema.parse({})),
  /** The admin's MCP servers the sidecar connects to as the run's gateway. */
  mcpServers: z.array(McpServerSchema).default([]),
  /** The backend of `web_search` (a tool of one of mcpServers); absent: web_search is offered nowhere. */
  webSearch: WebSearchSchema.optional(),
  /** Command seeds: whether they may run at all, and the prefixes that cover them. Absent (an older snapshot): none run. */
  seedCommands: z.strictObject({ allowed: z.boolean(), safeShell: z.array(z.string()) }).default({ allowed: false, safeShell: [] }),
  limits: z.strictObject({
    interactionTimeoutSeconds: z.number().int().min(0),
    shellTimeoutSeconds: z.number().int().min(1),
    /** Over /mcp, how long a call waiting on a prompt is held before a pending answer (absent: an older snapshot, or held). */
    promptHoldSeconds: z.number().int().min(0).max(3600).optional(),
  }),
  /** The HTTP tools the sidecar runs: whether they may reach local addresses, and how long one request may take. Absent (an older snapshot): neither local nor over 30 s. */
  outbound: z.strictObject({
    allowLocalNetwork: z.boolean(),
    timeoutSeconds: z.number().int().min(1),
  }).default({ allowLocalNetwork: false, timeoutSeconds: 30 }),
  pinned: z.strictObject({
    agentGeneration: z.number().int().optional(),
    policyGeneration: z.number().int().optional(),
  }).default({}),
}).superRefine(checkWebSearchServer);
/** The resolved policy of one run. */
export type RunPolicy = z.infer<typeof RunPolicySchema>;

/** Re-exported for readers of a run policy's permission maps. */
export { PermissionSchema };
