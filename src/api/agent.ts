import { z } from "zod";
import {
  BlueprintSecuritySchema,
  CredentialsSchema,
  ObjectNameSchema,
  SandboxBlockSchema,
  ToolPermissionsSchema,
  VerbatimSchema,
} from "./common.ts";
import { REFERENCE_RUNTIME_KIND, RUNTIME_KINDS } from "./runtime-kinds.ts";

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
  name: z.string().min(1).describe("The stage name (upstream's [stages.<name>]); unique within the Agent."),
  availableTools: z.array(z.string().min(1)).optional().describe("The tools the model may call in this stage (upstream's available_tools); others are refused."),
  availableConnectors: z.array(z.string().min(1)).optional().describe("MCP servers (by their LeviathPolicy name) all of whose tools the stage offers (upstream's available_connectors)."),
  requiredTools: z.array(z.string().min(1)).optional().describe("Tools the stage must have (upstream's required_tools)."),
  toolPermissions: ToolPermissionsSchema.optional().describe("Per-stage tool permissions; tighten the Agent's, never loosen the policy's."),
  /** Replaces the agent-level block whole when present (no field-by-field inheritance, as upstream). */
  sandbox: SandboxBlockSchema.optional().describe("This stage's sandbox; replaces the Agent's spec.sandbox whole (no field-by-field inheritance, as upstream)."),
  /** Parsed and, as upstream, without effect: taint tracking is resolved per agent. */
  security: BlueprintSecuritySchema.optional().describe("Accepted for upstream files; without effect (taint tracking is per agent, as upstream)."),
  runtime: StageRuntimeSchema.optional()
    .describe(`The stage's other upstream keys, verbatim for the runtime, in upstream's snake_case: ${RUNTIME_STAGE_KEYS.join(", ")}.`),
}).describe("One stage of the blueprint, in order.");
/** One stage of a blueprint. */
export type Stage = z.infer<typeof StageSchema>;

/** `[agent]`: identity and the keys the runtime reads, kept as written. */
export const AgentIdentitySchema = z.strictObject({
  name: z.string().min(1).optional().describe("Upstream's [agent] name; must equal metadata.name (grants are keyed by namespace/name, never by this)."),
  version: z.string().optional().describe("The blueprint's version (default 0.1.0)."),
  description: z.string().optional().describe("What the agent does."),
  entryStage: z.string().min(1).optional().describe("The stage the run starts in (upstream's entry_stage); default the first."),
  /** The other `[agent]` keys (`max_child_depth`, `dynamic_tools`, `nudge`, `output`, ...), verbatim. */
  runtime: VerbatimSchema.optional().describe("The other [agent] keys (max_child_depth, dynamic_tools, nudge, output, ...), verbatim for the runtime."),
}).describe("Upstream's [agent] table: identity and the keys the runtime reads.");

/** `[read_paths]`: what the blueprint declares it wants to read outside its workdir (never a grant). */
export const ReadPathsDeclarationSchema = z.strictObject({
  allow: z.array(z.string()).default([])
    .describe("Entries the agent asks to read: an exact path (its subtree), glob:<pattern> or regex:<pattern> (anchored, absolute). Inert until the LeviathPolicy grants them (spec.readPaths)."),
}).describe("Upstream's [read_paths]: what the agent wants to read outside its workdir. Declaring is not granting.");

/** `[safe_commands]`: a request to run without prompting, inert unless the admin allows it. */
export const SafeCommandsSchema = z.strictObject({
  tools: z.array(z.string()).optional().describe("Tools asked to run without prompting."),
  shell: z.array(z.string()).optional().describe("Shell commands asked to run without prompting."),
}).describe("Upstream's [safe_commands]: inert unless the policy sets spec.security.allowBlueprintSafeCommands.");

/** `spec.blueprintFiles`: the files that ship with the Agent, which `blueprint:` seeds read and nothing else does. */
export const BlueprintFilesSchema = z.strictObject({
  configMap: ObjectNameSchema.describe("A ConfigMap in the Agent's namespace that its owner opted in (label leviath.dev/blueprint-files: \"true\"; any other is never read for the Agent); each data key is one file of the blueprint directory (plain file names, at most 512 KiB in all, no binaryData). Copied into the Run's snapshot at start."),
}).describe("The blueprint's own files for blueprint: seeds, mounted read-only into the sidecar only and pinned at the Run's start; no read-path grant widens them.");

/** The Agent spec: an upstream blueprint, enforced parts strict, runtime parts verbatim. */
export const AgentSpecSchema = z.strictObject({
  /** The agent runtime image: any image that routes its tool calls through the sidecar. */
  image: z.string().min(1).optional()
    .describe("The agent runtime image (any image that routes its tool calls through the sidecar); must be allowed by the policy's spec.ceilings.runtimeImages. Default: the controller's --runtime-image."),
  runtime: z.strictObject({
    kind: z.enum(RUNTIME_KINDS).default(REFERENCE_RUNTIME_KIND)
      .describe(`Which agent client runs in the agent container: ${RUNTIME_KINDS.join(", ")} (docs/runtimes.md). Any kind but ${REFERENCE_RUNTIME_KIND} must be allowed by the policy's spec.ceilings.runtimeKinds; the controller starts it with 'leviath adapter <kind>' in spec.image.`),
    template: z.string().min(1).max(63).optional()
      .describe("For kind mcp-command only: the name of a command template the policy declares (spec.runtimeTemplates); required with that kind."),
  }).refine((r) => r.template === undefined || r.kind === "mcp-command", { message: "a template is for kind mcp-command only", path: ["template"] })
    .optional().describe("The agent runtime's kind (default: the reference runtime, leviath agent)."),
  credentials: CredentialsSchema.optional().describe("Secrets for the agent container of every Run of this Agent (model keys); see docs/security.md."),
  blueprintFiles: BlueprintFilesSchema.optional(),
  agent: AgentIdentitySchema.default({}),
  sandbox: SandboxBlockSchema.optional().describe("The Agent's sandbox, for every stage without its own."),
  readPaths: ReadPathsDeclarationSchema.optional(),
  toolPermissions: ToolPermissionsSchema.optional().describe("The blueprint's tool permissions; they tighten the policy's, never loosen them (finding tool-permission-clamped)."),
  security: BlueprintSecuritySchema.optional(),
  safeCommands: SafeCommandsSchema.optional(),
  toolScriptPermissions: z.record(z.string(), z.enum(["allow", "inherit", "deny"])).optional()
    .describe("Upstream's [tool_script_permissions]: script tool name to allow, inherit or deny (script tools do not run here)."),
  /** Stages in order; none declared means upstream's synthesised single stage `main`. */
  stages: z.array(StageSchema).default([]).describe("The stages in order; none means upstream's single synthesised stage 'main'."),
  /** Every other top-level table of the blueprint (context, compaction, mcp_servers, ...), verbatim. */
  blueprint: VerbatimSchema.optional().describe("Every other top-level table of the blueprint (context, compaction, mcp_servers, ...), verbatim for the runtime."),
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
}).describe("The blueprint (upstream's agent.leviath): what the author asks for. The LeviathPolicy decides what is granted.");
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
