import { z } from "zod";
import { SANDBOX_KINDS } from "./common.ts";

/** A status condition, shaped like `metav1.Condition`. */
export const ConditionSchema = z.strictObject({
  type: z.string().min(1).max(316),
  status: z.enum(["True", "False", "Unknown"]),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: z.string().min(1).describe("RFC 3339 time the status last changed."),
  reason: z.string().min(1).max(1024).describe("CamelCase machine-readable reason."),
  message: z.string().max(32_768),
});
/** A status condition. */
export type Condition = z.infer<typeof ConditionSchema>;

/** Condition types the operator writes. */
export const CONDITION = {
  /** Agent: the spec parsed and validates against the current policy. */
  valid: "Valid",
  /** Run: the effective run policy was resolved and pinned in its ConfigMap. */
  policyResolved: "PolicyResolved",
  /** Run: every sandbox pod is Ready (or the run fell back to the engine pod under `warn`). */
  sandboxReady: "SandboxReady",
  /** Run: a deny-all NetworkPolicy selects the sandbox pods of `network = false` stages. */
  networkIsolated: "NetworkIsolated",
  /** Run: a prompt waits for an Approval. */
  awaitingApproval: "AwaitingApproval",
  /** Run: every credential Secret it names exists and opted in (`leviath.dev/credential`). */
  credentialsReady: "CredentialsReady",
  /** Run: it finished (True), with how: the agent's exit, a deadline, a cancellation. */
  completed: "Completed",
} as const;

/** Condition reasons the operator writes (also error-class labels at the edges). */
export const REASON = {
  valid: "Valid",
  invalidSpec: "InvalidSpec",
  invalidPolicy: "InvalidPolicy",
  refusedByPolicy: "RefusedByPolicy",
  resolved: "Resolved",
  agentNotFound: "AgentNotFound",
  noRuntimeImage: "NoRuntimeImage",
  snapshotInvalid: "PolicySnapshotInvalid",
  waiting: "WaitingForPods",
  ready: "Ready",
  noSandbox: "NoSandbox",
  sandboxUnavailable: "SandboxUnavailable",
  fellBackToHost: "FellBackToHost",
  networkPolicyApplied: "NetworkPolicyApplied",
  networkPolicyEnforced: "NetworkPolicyEnforced",
  networkPolicyRestored: "NetworkPolicyRestored",
  networkNotEnforced: "NetworkNotEnforced",
  networkNotVerified: "NetworkEnforcementNotVerified",
  pendingApproval: "PendingApproval",
  noPendingApproval: "NoPendingApproval",
  terminal: "RunFinished",
  credentialsFound: "SecretsFound",
  noCredentials: "NoCredentials",
  secretNotFound: "SecretNotFound",
  secretNotOptedIn: "SecretNotOptedIn",
  credentialsOnHost: "CredentialsWithHostExecution",
  agentSucceeded: "AgentSucceeded",
  agentFailed: "AgentFailed",
  enginePodFailed: "EnginePodFailed",
  engineLost: "EnginePodLost",
  deadlineExceeded: "DeadlineExceeded",
  cancelled: "Cancelled",
  running: "Running",
} as const;

/** What the operator's NetworkPolicy probe found (LeviathPolicy `status.networkEnforcement`). */
export const NetworkEnforcementStatusSchema = z.strictObject({
  state: z.enum(["Verified", "NotEnforced", "Unknown"])
    .describe("Verified: a probe pod under a deny-all policy was refused while its twin without one connected; NotEnforced: both connected; Unknown: no conclusive probe."),
  message: z.string().max(4096),
  checkedAt: z.string().optional().describe("RFC 3339 time the last probe ended."),
  node: z.string().optional().describe("The node the probe pods ran on."),
});
/** The probe's finding. */
export type NetworkEnforcementStatus = z.infer<typeof NetworkEnforcementStatusSchema>;

/** One `lev validate` finding, with upstream's codes and messages. */
export const FindingSchema = z.strictObject({
  severity: z.enum(["error", "warning", "note"]),
  code: z.string().min(1),
  message: z.string(),
  fix: z.string().optional(),
  stage: z.string().optional(),
});
/** One finding. */
export type Finding = z.infer<typeof FindingSchema>;

/** A stage's sandbox as resolved against the current policy. */
export const StageSandboxStatusSchema = z.strictObject({
  stage: z.string().min(1),
  kind: z.enum(SANDBOX_KINDS),
  image: z.string().optional(),
  network: z.boolean(),
  mounts: z.array(z.string()),
  runtimeClassName: z.string().optional(),
  onUnavailable: z.enum(["error", "warn"]),
  source: z.enum(["blueprint", "policy", "clamped", "default"]),
});

/** Read paths declared by the blueprint and how many the policy grants (`lev ps`'s `g/d`). */
export const ReadPathCountsSchema = z.strictObject({
  declared: z.number().int().min(0),
  granted: z.number().int().min(0),
  display: z.string().describe("`granted/declared`, as lev ps prints it."),
});
/** Read-path counts. */
export type ReadPathCounts = z.infer<typeof ReadPathCountsSchema>;

/** The Agent status, recomputed against the current LeviathPolicy. */
export const AgentStatusSchema = z.strictObject({
  observedGeneration: z.number().int().min(0).optional(),
  policyGeneration: z.number().int().min(0).optional().describe("Generation of the LeviathPolicy this was evaluated against."),
  valid: z.boolean().optional(),
  stageCount: z.number().int().min(0).optional(),
  findings: z.array(FindingSchema).optional(),
  readPaths: ReadPathCountsSchema.optional(),
  resolvedSandboxes: z.array(StageSandboxStatusSchema).optional(),
  conditions: z.array(ConditionSchema).optional(),
});
/** The Agent status. */
export type AgentStatus = z.infer<typeof AgentStatusSchema>;

/** Run phases, mirroring upstream run states where they apply. */
export const RUN_PHASES = ["Pending", "Running", "WaitingInput", "Succeeded", "Failed", "Cancelled"] as const;
/** A run phase. */
export type RunPhase = (typeof RUN_PHASES)[number];
/** Phases a run never leaves. */
export const TERMINAL_PHASES: readonly RunPhase[] = ["Succeeded", "Failed", "Cancelled"];

/** One warm sandbox pod of a run. */
export const RunSandboxStatusSchema = z.strictObject({
  signature: z.string().min(1),
  pod: z.string().min(1),
  kind: z.enum(SANDBOX_KINDS),
  image: z.string().optional(),
  network: z.boolean(),
  runtimeClassName: z.string().optional(),
  stages: z.array(z.string()),
  ready: z.boolean(),
  fellBackToHost: z.boolean().optional(),
  unavailableReason: z.string().optional().describe("Why the sandbox could not start (upstream's `sandbox unavailable` reason)."),
});

/** A prompt waiting for an Approval (reported by the sidecar; bounded). */
export const PendingApprovalSchema = z.strictObject({
  id: z.string().min(1),
  kind: z.enum(["taint_gate", "tool_approval"]),
  tool: z.string(),
  stage: z.string().optional(),
  prompt: z.string().max(4096).optional(),
  raisedAt: z.string().optional(),
});

/** Results up to this many bytes (UTF-8) are written inline in `status.result.inline`. */
export const MAX_INLINE_RESULT_BYTES = 4096;
/** Results above the inline limit go to a ConfigMap `<run>-result`, up to this many bytes (upstream's answer cap); larger ones are refused. */
export const MAX_RESULT_BYTES = 256 * 1024;

/** What `submit_output` handed over, once the gate allowed it (written by the sidecar). */
export const RunResultSchema = z.strictObject({
  inline: z.string().max(MAX_INLINE_RESULT_BYTES).optional().describe(`The output itself when it is at most ${MAX_INLINE_RESULT_BYTES} bytes.`),
  configMapName: z.string().optional().describe("The ConfigMap (owned by the Run) whose key `result` holds a larger output."),
  secretName: z.string().optional(),
  bytes: z.number().int().min(0).optional().describe("Size of the output in bytes (UTF-8)."),
  sha256: z.string().regex(/^[0-9a-f]{64}$/).optional().describe("SHA-256 of the output, hex."),
  callId: z.string().optional().describe("The submit_output call that produced it."),
  stage: z.string().optional(),
});
/** A Run's result reference. */
export type RunResult = z.infer<typeof RunResultSchema>;

/**
 * The Run status. The controller owns the identity, phase, pods and conditions; the sidecar (field manager
 * `leviath-sidecar`) owns `stage`, `taint`, `gateDecisions`, `pendingApprovals` and `result`.
 */
export const RunStatusSchema = z.strictObject({
  observedGeneration: z.number().int().min(0).optional(),
  phase: z.enum(RUN_PHASES).optional(),
  message: z.string().max(32_768).optional(),
  agent: z.strictObject({ name: z.string(), generation: z.number().int().min(0) }).optional()
    .describe("The Agent generation the run is pinned to."),
  policy: z.strictObject({ name: z.string(), generation: z.number().int().min(0).optional() }).optional()
    .describe("The LeviathPolicy generation the run is pinned to (absent: no policy existed)."),
  startedAt: z.string().optional(),
  completedAt: z.string().optional(),
  enginePod: z.string().optional(),
  readPaths: ReadPathCountsSchema.optional(),
  sandboxes: z.array(RunSandboxStatusSchema).optional(),
  stage: z.string().optional(),
  taint: z.strictObject({ tracking: z.boolean(), level: z.enum(["public", "internal", "private"]) }).optional(),
  gateDecisions: z.record(z.string(), z.number().int().min(0)).optional(),
  pendingApprovals: z.array(PendingApprovalSchema).max(32).optional(),
  result: RunResultSchema.optional(),
  agentExit: z.strictObject({
    exitCode: z.number().int(),
    reason: z.string().max(1024).optional(),
    message: z.string().max(4096).optional(),
  }).optional().describe("How the agent container ended (from the kubelet's report)."),
  conditions: z.array(ConditionSchema).optional(),
});
/** The Run status. */
export type RunStatus = z.infer<typeof RunStatusSchema>;
