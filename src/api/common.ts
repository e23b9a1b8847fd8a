import { z } from "zod";

/** A tool permission value (`[tool_permissions]`). */
export const PermissionSchema = z.enum(["allow", "ask", "deny"]);
/** A tool permission value. */
export type Permission = z.infer<typeof PermissionSchema>;

/** Tool name to permission; keys are tool names as the model calls them (aliases fold later). */
export const ToolPermissionsSchema = z.record(z.string().min(1), PermissionSchema);
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
  kind: z.enum(SANDBOX_KINDS).optional(),
  image: z.string().min(1).optional(),
  /** Accepted for compatibility with upstream files and always discarded: a blueprint never picks the engine. */
  engine: z.string().optional(),
  network: z.boolean().optional(),
  mounts: z.array(z.string().startsWith("/", "a mount must be an absolute path")).optional(),
  /** Parsed and carried, read by nothing (as upstream). */
  persist: z.boolean().optional(),
  onUnavailable: z.enum(["error", "warn"]).optional(),
});
/** A blueprint `[sandbox]` table. */
export type SandboxBlock = z.infer<typeof SandboxBlockSchema>;

/** `[security]` of a blueprint: a present block with no key turns taint tracking on. */
export const BlueprintSecuritySchema = z.strictObject({
  taintTracking: z.boolean().optional(),
});
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
export const VerbatimSchema = z.record(z.string(), z.unknown());

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
 * A Secret whose keys reach the agent container only (never the sidecar, never a sandbox pod): as environment
 * variables (`env`, the default) or as files under `/var/run/leviath/credentials/<secretName>/` (`files`). The
 * Secret must be in the Run's namespace and carry the opt-in label `leviath.dev/credential: "true"`.
 */
export const CredentialSchema = z.strictObject({
  secretName: ObjectNameSchema.describe("A Secret in the Run's namespace labelled `leviath.dev/credential: \"true\"`."),
  as: z.enum(["env", "files"]).default("env").describe("env: every key becomes an environment variable; files: every key a file."),
});
/** One credential reference. */
export type Credential = z.infer<typeof CredentialSchema>;

/** At most this many credential Secrets per Agent or Run. */
export const MAX_CREDENTIALS = 16;

/** A list of credential references (Agent or Run). */
export const CredentialsSchema = z.array(CredentialSchema).max(MAX_CREDENTIALS);
