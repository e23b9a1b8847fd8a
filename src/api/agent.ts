import { z } from "zod";
import {
  BlueprintSecuritySchema,
  CredentialsSchema,
  SandboxBlockSchema,
  ToolPermissionsSchema,
  VerbatimSchema,
} from "./common.ts";

/**
 * Stage keys upstream accepts (`[stages.X]` is strict upstream too): the snapshot's list plus the newer
 * `output_routing` that upstream's own example blueprints use. The ones the operator and sidecar
 * enforce are modelled below; the rest belong to the agent runtime and travel verbatim in `runtime`.
 */
export const UPSTREAM_STAGE_KEYS = [
  "accepts_messages", "allow_as_worker", "allow_blocking_tools", "allow_complete",
  "available_connectors", "available_tools", "batch_tool_hint", "context", "description",
  "hooks", "interaction_points", "max_attempts", "max_items", "max_iterations", "max_revisits",
  "max_workers", "merge_stage", "mode", "model", "nudge", "on_worker_failure", "output",
  "output_routing", "require_output", "required_tools", "requires_children", "results_region", "sandbox",
  "security", "shell_hint", "split_prompt", "system_prompt", "tool_permissions",
  "tool_routing", "transition_prompt", "transitions", "worker_agent", "worker_query",
  "worker_stage",
] as const;

/** Stage keys modelled strictly (camelCase in YAML); every other upstream key goes to `runtime`. */
export const ENFORCED_STAGE_KEYS = ["available_tools", "available_connectors", "required_tools", "tool_permissions", "sandbox", "security"] as const;

/** Stage keys handed to the runtime verbatim, in upstream's snake_case. */
export const RUNTIME_STAGE_KEYS: readonly string[] = UPSTREAM_STAGE_KEYS.filter(
  (k) => !(ENFORCED_STAGE_KEYS as readonly string[]).includes(k),
);

/** Stage modes upstream knows; `output` adds `submit_output` to the stage's tools. */
export const STAGE_MODES = ["autonomous", "interactive", "interactive_points", "fan_out", "output"] as const;

const StageRuntimeSchema = VerbatimSchema.superRefine((runtime, ctx) => {
  for (const key of Object.keys(runtime)) {
    if (!RUNTIME_STAGE_KEYS.includes(key)) {
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: `unknown key '${key}' (valid: ${RUNTIME_STAGE_KEYS.join(", ")})`,
      });
    }
  }
  const mode = runtime["mode"];
  if (mode !== undefined && !(STAGE_MODES as readonly unknown[]).includes(mode)) {
    ctx.addIssue({ code: "custom", path: ["mode"], message: `unknown mode '${String(mode)}' (valid: ${STAGE_MODES.join(", ")})` });
  }
});

/** One stage of a blueprint, in declaration order. */
export const StageSchema = z.strictObject({
  name: z.string().min(1),
  availableTools: z.array(z.string().min(1)).optional(),
  /** MCP servers (by their LeviathPolicy name) every tool of which the stage offers, as upstream's `available_connectors`. */
  availableConnectors: z.array(z.string().min(1)).optional(),
  requiredTools: z.array(z.string().min(1)).optional(),
  toolPermissions: ToolPermissionsSchema.optional(),
  /** Replaces the agent-level block whole when present (no field-by-field inheritance, as upstream). */
  sandbox: SandboxBlockSchema.optional(),
  /** Parsed and, as upstream, without effect: taint tracking is resolved per agent. */
  security: BlueprintSecuritySchema.optional(),
  runtime: StageRuntimeSchema.optional(),
});
/** One stage of a blueprint. */
export type Stage = z.infer<typeof StageSchema>;

/** `[agent]`: identity and the keys the runtime reads, kept as written. */
export const AgentIdentitySchema = z.strictObject({
  name: z.string().min(1).optional(),
  version: z.string().optional(),
  description: z.string().optional(),
  entryStage: z.string().min(1).optional(),
  /** The other `[agent]` keys (`max_child_depth`, `dynamic_tools`, `nudge`, `output`, ...), verbatim. */
  runtime: VerbatimSchema.optional(),
});

/** `[read_paths]`: what the blueprint declares it wants to read outside its workdir (never a grant). */
export const ReadPathsDeclarationSchema = z.strictObject({
  allow: z.array(z.string()).default([]),
});

/** `[safe_commands]`: a request to run without prompting, inert unless the admin allows it. */
export const SafeCommandsSchema = z.strictObject({
  tools: z.array(z.string()).optional(),
  shell: z.array(z.string()).optional(),
});

/** The Agent spec: an upstream blueprint, enforced parts strict, runtime parts verbatim. */
export const AgentSpecSchema = z.strictObject({
  /** The agent runtime image: any image that routes its tool calls through the sidecar. */
  image: z.string().min(1).optional(),
  credentials: CredentialsSchema.optional().describe("Secrets for the agent container of every Run of this Agent (model keys); see docs/security.md."),
  agent: AgentIdentitySchema.default({}),
  sandbox: SandboxBlockSchema.optional(),
  readPaths: ReadPathsDeclarationSchema.optional(),
  toolPermissions: ToolPermissionsSchema.optional(),
  security: BlueprintSecuritySchema.optional(),
  safeCommands: SafeCommandsSchema.optional(),
  toolScriptPermissions: z.record(z.string(), z.enum(["allow", "inherit", "deny"])).optional(),
  /** Stages in order; none declared means upstream's synthesised single stage `main`. */
  stages: z.array(StageSchema).default([]),
  /** Every other top-level table of the blueprint (context, compaction, mcp_servers, ...), verbatim. */
  blueprint: VerbatimSchema.optional(),
}).superRefine((spec, ctx) => {
  const seen = new Set<string>();
  spec.stages.forEach((stage, i) => {
    if (seen.has(stage.name)) {
      ctx.addIssue({ code: "custom", path: ["stages", i, "name"], message: `duplicate stage '${stage.name}'` });
    }
    seen.add(stage.name);
  });
  const entry = spec.agent.entryStage;
  if (entry !== undefined && spec.stages.length > 0 && !seen.has(entry)) {
    ctx.addIssue({ code: "custom", path: ["agent", "entryStage"], message: `entry stage '${entry}' is not a declared stage` });
  }
});
/** The Agent spec as parsed (defaults applied). */
export type AgentSpec = z.infer<typeof AgentSpecSchema>;
/** The Agent spec as written. */
export type AgentSpecInput = z.input<typeof AgentSpecSchema>;

/** The stage upstream synthesises when a blueprint declares none. */
export const SYNTHESISED_STAGE = "main";

/** The stages a run actually has: the declared ones, or upstream's single synthesised `main`. */
export function computeEffectiveStages(spec: AgentSpec): Stage[] {
  return spec.stages.length > 0 ? spec.stages : [{ name: SYNTHESISED_STAGE }];
}
