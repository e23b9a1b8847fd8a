// The one finding type of `leviath validate` and the Agent's status, and the one table of finding codes: the CLI,
// the policy core and the controller all import these, so a finding has one name wherever it is read.
import { z } from "zod";

/** Finding severities, as `lev validate --json` spells them. */
export const FINDING_SEVERITIES = ["error", "warning", "note"] as const;
/** A finding severity. */
export type FindingSeverity = (typeof FINDING_SEVERITIES)[number];

/** Every finding code; upstream `lev validate`'s where one exists (the read-path ones), ours otherwise. */
export const FINDING_CODE = {
  readPathsDeclared: "read-paths-declared",
  readPathsNotGranted: "read-paths-not-granted",
  readPathsGrantInvalid: "read-paths-grant-invalid",
  /** A grant no volume of the LeviathPolicy reaches: in a cluster the sidecar has nothing at its path. */
  readPathGrantUnbacked: "read-path-grant-unbacked",
  broadReadPath: "broad-read-path",
  /** The blueprint does not parse (a schema violation, an entry that does not compile, a name mismatch). */
  blueprintInvalid: "blueprint-invalid",
  runtimeImageNotAllowed: "runtime-image-not-allowed",
  runtimeKindNotAllowed: "runtime-kind-not-allowed",
  runtimeTemplateNotDeclared: "runtime-template-not-declared",
  sandboxEngineIgnored: "sandbox-engine-ignored",
  sandboxStageOptsOut: "sandbox-stage-opts-out",
  /** The admin's policy changed what a sandbox block asks for: kind, image, network, mounts, onUnavailable. */
  sandboxKindClamped: "sandbox-kind-clamped",
  sandboxImageClamped: "sandbox-image-clamped",
  sandboxNetworkClamped: "sandbox-network-clamped",
  sandboxMountsClamped: "sandbox-mounts-clamped",
  sandboxOnUnavailableClamped: "sandbox-on-unavailable-clamped",
  toolPermissionClamped: "tool-permission-clamped",
  /** A toolPermissions key or availableTools entry that names no tool (a typo): it governs nothing. */
  unknownToolName: "unknown-tool-name",
  stageNoModel: "stage-no-model",
  /** A blueprint file's `[agent] name` no Kubernetes Agent can carry (`import` needs `--name`). */
  agentNameNotKubernetes: "agent-name-not-kubernetes",
  /** The blueprint ships `tools/*.rhai` script tools, which nothing runs here. */
  scriptToolsNotRun: "script-tools-not-run",
} as const;
/** A finding code. */
export type FindingCode = (typeof FINDING_CODE)[keyof typeof FINDING_CODE];

/** One finding, as the Agent's status stores it and `leviath validate` prints it. */
export const FindingSchema = z.strictObject({
  severity: z.enum(FINDING_SEVERITIES).describe("error: the Agent is not valid; warning and note: it runs."),
  code: z.string().min(1).describe("Stable code, upstream lev validate's where one exists (read-paths-not-granted, tool-permission-clamped, sandbox-image-clamped, ...; docs/cli.md)."),
  message: z.string().describe("What is wrong, naming the entry or field."),
  fix: z.string().optional().describe("How to fix it, where it is fixed (for a cluster: the LeviathPolicy or Agent field)."),
  stage: z.string().optional().describe("The stage it concerns; absent for the Agent as a whole."),
}).describe("One finding of the Agent's validation.");
/** One finding. */
export type Finding = z.infer<typeof FindingSchema> & { code: FindingCode };

/** Where a finding's advice points: the admin's file or resource, and the blueprint's. */
export interface FindingAdvice {
  /** `LeviathPolicy`: advice names its fields (`spec.readPaths.perAgent`); `config.toml`: upstream's tables. */
  policy: "LeviathPolicy" | "config.toml";
  /** `Agent`: advice names the resource's fields (`spec.stages[0].sandbox`); `agent.leviath`: the TOML tables. */
  blueprint: "Agent" | "agent.leviath";
}

/** The advice of the operator: a LeviathPolicy and an Agent. */
export const CLUSTER_ADVICE: FindingAdvice = { policy: "LeviathPolicy", blueprint: "Agent" };

/** A finding in upstream's `--json` shape: every key present, `null` where there is nothing. */
export function formatFindingJson(f: Finding): { severity: FindingSeverity; code: string; stage: string | null; message: string; fix: string | null } {
  return { severity: f.severity, code: f.code, stage: f.stage ?? null, message: f.message, fix: f.fix ?? null };
}
