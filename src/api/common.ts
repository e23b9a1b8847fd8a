import { z } from "zod";

/** A tool permission value (`[tool_permissions]`). */
export const PermissionSchema = z.enum(["allow", "ask", "deny"]).describe("allow: runs without asking; ask: waits for a person (an Approval); deny: refused.");
/** A tool permission value. */
export type Permission = z.infer<typeof PermissionSchema>;

/** Tool name to permission; keys are tool names as the model calls them (aliases fold later). */
export const ToolPermissionsSchema = z.record(z.string().min(1), PermissionSchema)
  .describe("Tool name (as the model calls it, e.g. shell, read_file, web_fetch) to allow, ask or deny (upstream's [tool_permissions]).");
/** Tool name to permission. */
export type ToolPermissions = z.infer<typeof ToolPermissionsSchema>;

/** A sensitivity level as written in files (case-insensitive upstream; normalised to lower case here). */
export const LevelSchema = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(z.enum(["public", "internal", "private"]));
/** A sensitivity level. */
export type LevelName = "public" | "internal" | "private";

/** Sandbox kinds, weakest first: upstream's three plus the two runtime-class kinds of DESIGN.md §3. */
export const SANDBOX_KINDS = ["none", "namespace", "container", "gvisor", "microvm"] as const;
/** A sandbox kind. */
export type SandboxKind = (typeof SANDBOX_KINDS)[number];

/** The `[sandbox]` table of a blueprint, at agent or stage level: only the seed's keys, nothing else. */
export const SandboxBlockSchema = z.strictObject({
  kind: z.enum(SANDBOX_KINDS).optional()
    .describe("Where commands run, weakest first: none (the agent container), namespace, container (a sandbox pod), gvisor, microvm (runtime classes the policy maps). The policy's floor may raise it; a blueprint can only tighten."),
  image: z.string().min(1).optional().describe("Image of the sandbox pod. Under an active policy floor the policy's spec.sandbox.image replaces it (source clamped, finding sandbox-image-clamped)."),
  /** Accepted for compatibility with upstream files and always discarded: a blueprint never picks the engine. */
  engine: z.string().optional().describe("Accepted for upstream files and ignored (finding sandbox-engine-ignored): the policy maps kinds to runtime classes."),
  network: z.boolean().optional().describe("false: a deny-all NetworkPolicy isolates the sandbox pod (no ingress, no egress)."),
  mounts: z.array(z.string().startsWith("/", "a mount must be an absolute path")).optional()
    .describe("Absolute paths to mount in the sandbox; under an active policy floor only those its spec.sandbox.mounts lists are kept."),
  /** Parsed and carried, read by nothing (as upstream). */
  persist: z.boolean().optional().describe("Accepted for upstream files; has no effect (as upstream)."),
  onUnavailable: z.enum(["error", "warn"]).optional()
    .describe("When the sandbox cannot start (no runtime class, never Ready): error fails the Run (default); warn runs those stages in the engine pod and says so in SandboxReady."),
}).describe("A [sandbox] table: where the agent's commands run. Only these keys; an unknown one is refused, naming it.");
/** A blueprint `[sandbox]` table. */
export type SandboxBlock = z.infer<typeof SandboxBlockSchema>;

/** `[security]` of a blueprint: a present block with no key turns taint tracking on. */
export const BlueprintSecuritySchema = z.strictObject({
  taintTracking: z.boolean().optional().describe("Ask for taint tracking (a present [security] block with no key asks too); the policy's spec.security.taintTracking can only add to it."),
}).describe("The blueprint's [security] block.");
/** A blueprint `[security]` block. */
export type BlueprintSecurity = z.infer<typeof BlueprintSecuritySchema>;

/**
 * `namespace/name`, the key of every per-agent grant (never a self-declared name). The name part is matched
 * exactly and case-sensitively, as upstream's `[agent_read_paths.<name>]`: a key no Agent can have (`team/CTO`)
 * is kept and grants nothing, rather than failing the whole policy.
 */
export const AgentKeySchema = z
  .string()
  .max(317)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[\s\S]+$/, "must be 'namespace/name' of an Agent");

/** The grant key of an Agent: `namespace/name`, the one way every surface spells it. */
export function buildAgentKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Values copied verbatim for the agent runtime; the operator never interprets them. */
export const VerbatimSchema = z.record(z.string(), z.unknown()).describe("Values for the agent runtime, in upstream's own key names, passed on unchanged.");

/** How a run answers a prompt: a person, nobody (asks expire), yolo (asks waived and recorded), or no prompt lane. */
export const RUN_MODES = ["interactive", "unattended", "yolo", "headless"] as const;
/** A run mode. */
export type RunMode = (typeof RUN_MODES)[number];
/** Kubernetes object name (DNS-1123 subdomain). */
export const ObjectNameSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, "must be a lower-case DNS-1123 name");

/**
 * A Secret whose keys reach the agent container only (never a sandbox pod; the sidecar only in a warm pool's pod,
 * reading them once to hand them over, docs/security.md "Warm pools"): as environment
 * variables (`env`, the default) or as files under `/var/run/leviath/credentials/<secretName>/` (`files`). The
 * Secret must be in the Run's namespace and carry the opt-in label `leviath.dev/credential: "true"`.
 */
export const CredentialSchema = z.strictObject({
  secretName: ObjectNameSchema.describe("A Secret in the Run's namespace labelled `leviath.dev/credential: \"true\"`. A base URL the Run picks (spec.runtime.providers.<name>.baseUrl) is used with it only if its annotation `leviath.dev/credential-endpoints` lists that endpoint."),
  as: z.enum(["env", "files"]).default("env").describe("env: every key becomes an environment variable; files: every key a file."),
});
/** One credential reference. */
export type Credential = z.infer<typeof CredentialSchema>;

/** At most this many credential Secrets per Agent or Run. */
export const MAX_CREDENTIALS = 16;

/** A list of credential references (Agent or Run). */
export const CredentialsSchema = z.array(CredentialSchema).max(MAX_CREDENTIALS);
