/** API group of every Leviath resource. */
export const GROUP = "leviath.dev";
/** The one served version. */
export const VERSION = "v1alpha1";
/** `group/version` as written in `apiVersion`. */
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Kinds served by the operator. */
export const KIND = {
  agent: "Agent",
  run: "Run",
  policy: "LeviathPolicy",
  approval: "Approval",
} as const;

/** Name of the cluster-wide LeviathPolicy singleton. */
export const CLUSTER_POLICY_NAME = "cluster";

/** Namespace assumed for upstream files, which carry no namespace of their own. */
export const DEFAULT_NAMESPACE = "default";

/** Field manager for every server-side apply the operator makes. */
export const FIELD_MANAGER = "leviath-operator";

/** Labels and annotations the operator writes. */
export const LABEL = {
  run: "leviath.dev/run",
  /** On an Approval: the uid of the Run it is bound to, set by the controller only (the sidecar watches by it). */
  runUid: "leviath.dev/run-uid",
  agent: "leviath.dev/agent",
  component: "leviath.dev/component",
  sandboxSignature: "leviath.dev/sandbox-signature",
  network: "leviath.dev/network",
  managedBy: "app.kubernetes.io/managed-by",
  /** On a Secret: `"true"` lets Agents and Runs of its namespace name it as a credential. */
  credential: "leviath.dev/credential",
  /**
   * On a ConfigMap: `"true"` lets Agents of its namespace name it as their `spec.blueprintFiles.configMap` (its
   * files are then pinned into their Runs, where the Run's creator can read them back): set by whoever may write it.
   */
  blueprintFiles: "leviath.dev/blueprint-files",
  /** On a Secret: the one MCP server (its LeviathPolicy name) whose `secretRef` may deliver it to the sidecar. */
  mcpServer: "leviath.dev/mcp-server",
  /** On a warm pool's pods and their claims: the Agent (its name; the pool lives in its namespace) the pool serves. */
  pool: "leviath.dev/pool",
  /** On a pool pod: `ready` (unbound, nothing of any Run in it) or `bound` (adopted by the Run it names). */
  poolState: "leviath.dev/pool-state",
  /**
   * On a pool engine pod and the pool sandbox pods made for it: that engine pod's name, so its sandbox pods are
   * scheduled beside it (their workspace is its claim) and adopted with it.
   */
  poolPair: "leviath.dev/pool-pair",
} as const;

/** Annotations an owner sets on a credential Secret (docs/security.md, "Credentials"). */
export const CREDENTIAL_ANNOTATION = {
  /** The endpoints (base URLs, space- or comma-separated) the Secret's keys may be sent to when a Run picks a base URL. */
  endpoints: "leviath.dev/credential-endpoints",
} as const;

/** Annotations the operator writes on objects it does not own. */
export const APPROVAL_ANNOTATION = {
  /** The ServiceAccount of the sidecar that may mark this Approval consumed (checked at admission). */
  sidecarServiceAccount: "leviath.dev/sidecar-service-account",
} as const;
/** Field manager (and `managed-by` label value) of what the sidecar writes: its part of the Run status, result and audit objects. */
export const SIDECAR_FIELD_MANAGER = "leviath-sidecar";
/**
 * Field manager of the one Run status field the sidecar writes on its own, `result`: applied before the runtime
 * hears that a `submit_output` was accepted, and never part of the periodic status write, so no restart can drop it.
 */
export const SIDECAR_RESULT_FIELD_MANAGER = "leviath-sidecar-result";
/**
 * Field manager of `status.audit`, the digests of the audit ConfigMaps the sidecar wrote: applied after each chunk
 * write, never part of the periodic status write.
 */
export const SIDECAR_AUDIT_FIELD_MANAGER = "leviath-sidecar-audit";

/** Annotations a person sets on a Run (admission decides who may: the chart's `<release>-resume` policy). */
export const RUN_ANNOTATION = {
  /** Resume the Run: a new value asks the controller to re-resolve its read-path grants against the current policy. */
  resume: "leviath.dev/resume",
} as const;
