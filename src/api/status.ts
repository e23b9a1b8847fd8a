import { z } from "zod";
import { SANDBOX_KINDS } from "./common.ts";
import { FindingSchema } from "./findings.ts";
import { STARTED_FROM } from "./pools.ts";

/** A status condition, shaped like `metav1.Condition`. */
export const ConditionSchema = z.strictObject({
  type: z.string().min(1).max(316).describe("The condition's type (Ready, Stalled, Reconciling, Valid, PolicyResolved, SandboxReady, ...; docs/controller.md)."),
  status: z.enum(["True", "False", "Unknown"]).describe("True, False or Unknown."),
  observedGeneration: z.number().int().min(0).optional().describe("The metadata.generation this condition was decided for."),
  lastTransitionTime: z.string().min(1).describe("RFC 3339 time the status last changed."),
  reason: z.string().min(1).max(1024).describe("CamelCase machine-readable reason."),
  message: z.string().max(32_768).describe("What happened, for a person; names the field or object concerned."),
}).describe("A status condition (metav1.Condition).");
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
  /** Run: every MCP server of its policy is offered (its Secret opted in and mounted, its keys present, it listed its tools). */
  mcpServersReady: "McpServersReady",
  /** Run: calls that a warn candidate LeviathPolicy would decide otherwise (present only while True). */
  policyWouldFlip: "PolicyWouldFlip",
  /** Run: a pod of it cannot be scheduled, or its workspace claim is not bound (present only while True). */
  podsWaiting: "PodsWaiting",
  /** Run: it finished (True), with how: the agent's exit, a deadline, a cancellation. */
  completed: "Completed",
  /** Run: the namespace enforces Pod Security `restricted` (`pod-security.kubernetes.io/enforce`). */
  podSecurityEnforced: "PodSecurityEnforced",
  /**
   * Every kind: the summary kstatus, `kubectl wait` and GitOps health checks read. Agent and LeviathPolicy: valid
   * and in force; Run: succeeded (like a Job, a Run is Ready once its work is done). False while in progress or failed.
   */
  ready: "Ready",
  /** Every kind, present only when True: no progress without a change by someone (kstatus: Failed). */
  stalled: "Stalled",
  /** Run, present only when True: the controller or the agent is still working on it (kstatus: InProgress). */
  reconciling: "Reconciling",
  /**
   * Run, present (True) only while the API server refuses the writes of its children (as a ReplicaSet's
   * ReplicaFailure); the reason names the kind of refusal (controller/error-reasons.ts), the message is the server's.
   */
  childrenFailure: "ChildrenFailure",
} as const;

/** Condition reasons the operator writes (also error-class labels at the edges). */
export const REASON = {
  /** Run PolicyWouldFlip: a warn candidate would decide some of its calls otherwise. */
  wouldFlip: "WouldFlip",
  valid: "Valid",
  invalidSpec: "InvalidSpec",
  invalidPolicy: "InvalidPolicy",
  /** The server has a LeviathPolicy the controller's cache does not show yet: a Run waits instead of pinning upstream's defaults. */
  policyNotCached: "PolicyNotCached",
  refusedByPolicy: "RefusedByPolicy",
  /** The workspace claim is another Run's, or a claim the operator did not make holds the Run's own claim name. */
  workspaceInUse: "WorkspaceInUse",
  resolved: "Resolved",
  agentNotFound: "AgentNotFound",
  noRuntimeImage: "NoRuntimeImage",
  snapshotInvalid: "PolicySnapshotInvalid",
  blueprintFilesNotFound: "BlueprintFilesNotFound",
  blueprintFilesInvalid: "BlueprintFilesInvalid",
  /** The Agent's blueprint-files ConfigMap lacks the opt-in label `leviath.dev/blueprint-files: "true"`. */
  blueprintFilesNotOptedIn: "BlueprintFilesNotOptedIn",
  waiting: "WaitingForPods",
  /** The scheduler could not place a pod of the Run (its message quoted). */
  unschedulable: "Unschedulable",
  /** A claim of the Run is not bound to a volume (Pending with the scheduler unable to place the pod, or Lost). */
  claimNotBound: "ClaimNotBound",
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
  /** A stdio MCP server's env names its Secret, and the admin did not opt it in (`secretEnvInSandbox`). */
  secretInSandboxRefused: "SecretInSandboxRefused",
  credentialsOnHost: "CredentialsWithHostExecution",
  mcpServersOffered: "McpServersOffered",
  mcpServersConnecting: "McpServersConnecting",
  mcpServerUnavailable: "McpServerUnavailable",
  agentSucceeded: "AgentSucceeded",
  agentFailed: "AgentFailed",
  enginePodFailed: "EnginePodFailed",
  engineLost: "EnginePodLost",
  deadlineExceeded: "DeadlineExceeded",
  cancelled: "Cancelled",
  running: "Running",
  podSecurityRestricted: "Restricted",
  namespaceNotRestricted: "NamespaceNotRestricted",
  namespaceNotObserved: "NamespaceNotObserved",
  failedCreate: "FailedCreate",
  /** Why a request failed (ChildrenFailure): the API server's refusal or what kept the request from it. */
  forbidden: "Forbidden",
  notFound: "NotFound",
  conflict: "Conflict",
  invalid: "Invalid",
  tooManyRequests: "TooManyRequests",
  serverError: "ServerError",
  timeout: "Timeout",
  unreachable: "Unreachable",
  internalError: "InternalError",
} as const;

/** What the operator's NetworkPolicy probe found (LeviathPolicy `status.networkEnforcement`). */
export const NetworkEnforcementStatusSchema = z.strictObject({
  state: z.enum(["Verified", "NotEnforced", "Unknown"])
    .describe("Verified: a probe pod under a deny-all policy was refused while its twin without one connected; NotEnforced: both connected; Unknown: no conclusive probe."),
  message: z.string().max(4096).describe("What the probe saw."),
  checkedAt: z.string().optional().describe("RFC 3339 time the last probe ended."),
  node: z.string().optional().describe("The node the probe pods ran on."),
}).describe("What the controller's NetworkPolicy probe found (spec.networkEnforcement.verify).");
/** The probe's finding. */
export type NetworkEnforcementStatus = z.infer<typeof NetworkEnforcementStatusSchema>;


/** A stage's sandbox as resolved against the current policy. */
export const StageSandboxStatusSchema = z.strictObject({
  stage: z.string().min(1).describe("The stage."),
  kind: z.enum(SANDBOX_KINDS).describe("The kind it runs with, after the policy's floor."),
  image: z.string().optional().describe("The sandbox image it runs with."),
  network: z.boolean().describe("Whether the sandbox has network access."),
  mounts: z.array(z.string()).describe("The mounts granted (those the policy offers)."),
  runtimeClassName: z.string().optional().describe("The RuntimeClass its pod gets (from the policy's runtimeClasses)."),
  onUnavailable: z.enum(["error", "warn"]).describe("What happens when the sandbox cannot start."),
  source: z.enum(["blueprint", "policy", "clamped", "default"])
    .describe("Where the settings come from: the blueprint, the policy, clamped (the policy's floor raised the blueprint's), or the defaults."),
}).describe("A stage's sandbox as resolved against the current policy.");

/** Read paths declared by the blueprint and how many the policy grants (`lev ps`'s `g/d`). */
export const ReadPathCountsSchema = z.strictObject({
  declared: z.number().int().min(0).describe("Entries the blueprint declares."),
  granted: z.number().int().min(0).describe("Of those, the entries the policy grants."),
  display: z.string().describe("`granted/declared`, as lev ps prints it."),
}).describe("Read paths declared by the blueprint and how many the policy grants.");
/** Read-path counts. */
export type ReadPathCounts = z.infer<typeof ReadPathCountsSchema>;

/** The Agent status, recomputed against the current LeviathPolicy. */
export const AgentStatusSchema = z.strictObject({
  observedGeneration: z.number().int().min(0).optional().describe("The metadata.generation this status is about."),
  policyGeneration: z.number().int().min(0).optional().describe("Generation of the LeviathPolicy this was evaluated against."),
  valid: z.boolean().optional().describe("Whether Runs of this Agent can start (no error finding)."),
  stageCount: z.number().int().min(0).optional().describe("Number of stages a run has."),
  findings: z.array(FindingSchema).optional().describe("The validation findings, worst first."),
  readPaths: ReadPathCountsSchema.optional(),
  resolvedSandboxes: z.array(StageSandboxStatusSchema).optional().describe("Each stage's sandbox under the current policy."),
  conditions: z.array(ConditionSchema).optional().describe("Valid, and Ready/Stalled for kstatus and kubectl wait."),
}).describe("What the controller made of the Agent under the current LeviathPolicy.");
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
  signature: z.string().min(1).describe("Hash of the settings (image, network, mounts, runtime class) stages share one pod by."),
  pod: z.string().min(1).describe("The sandbox pod's name."),
  kind: z.enum(SANDBOX_KINDS).describe("The sandbox kind."),
  image: z.string().optional().describe("The sandbox image."),
  network: z.boolean().describe("Whether the pod has network access."),
  runtimeClassName: z.string().optional().describe("The pod's RuntimeClass."),
  stages: z.array(z.string()).describe("The stages whose commands run in it."),
  ready: z.boolean().describe("Whether the pod is Ready."),
  fellBackToHost: z.boolean().optional().describe("True when it could not start and, under onUnavailable warn, its stages run in the engine pod."),
  unavailableReason: z.string().optional().describe("Why the sandbox could not start (upstream's `sandbox unavailable` reason)."),
}).describe("One warm sandbox pod of the run.");

/** A prompt waiting for an Approval (reported by the sidecar; bounded). */
export const PendingApprovalSchema = z.strictObject({
  id: z.string().min(1).describe("The id an Approval names in spec.approvalId."),
  kind: z.enum(["taint_gate", "tool_approval"]).describe("Upstream's wait reason: taint_gate (data above the tool's clearance) or tool_approval (a tool permission of ask)."),
  tool: z.string().describe("The tool the call is for."),
  target: z.string().max(256).optional().describe("What the call acts on, shown safely and cut short: the command (shell), the path or paths (file tools), else the URL host, recipient or channel."),
  stage: z.string().optional().describe("The stage the call was made in."),
  prompt: z.string().max(4096).optional().describe("The prompt text, as upstream words it."),
  raisedAt: z.string().optional().describe("RFC 3339 time it was raised."),
}).describe("A prompt waiting for an Approval.");

/** Results up to this many bytes (UTF-8) are written inline in `status.result.inline`. */
export const MAX_INLINE_RESULT_BYTES = 4096;
/** Results above the inline limit go to a ConfigMap `<run>-result`, up to this many bytes (upstream's answer cap); larger ones are refused. */
export const MAX_RESULT_BYTES = 256 * 1024;

/** What `submit_output` handed over, once the gate allowed it (written by the sidecar). */
export const RunResultSchema = z.strictObject({
  inline: z.string().max(MAX_INLINE_RESULT_BYTES).optional().describe(`The output itself when it is at most ${MAX_INLINE_RESULT_BYTES} bytes.`),
  configMapName: z.string().optional().describe("The ConfigMap (owned by the Run) whose key `result` holds a larger output."),
  secretName: z.string().optional().describe("Reserved: a Secret holding the output (not written by this version)."),
  bytes: z.number().int().min(0).optional().describe("Size of the output in bytes (UTF-8)."),
  sha256: z.string().regex(/^[0-9a-f]{64}$/).optional().describe("SHA-256 of the output, hex."),
  callId: z.string().optional().describe("The submit_output call that produced it."),
  stage: z.string().optional().describe("The stage it was submitted in."),
}).describe("What submit_output handed over, once the gate allowed it.");
/** A Run's result reference. */
export type RunResult = z.infer<typeof RunResultSchema>;

/** Most audit ConfigMaps a Run's sidecar writes (`<run>-audit-000` ... `-031`); `status.audit.chunks` lists at most as many. */
export const MAX_AUDIT_CHUNKS = 32;

/**
 * What the sidecar wrote into one audit ConfigMap, as it recorded it in the Run's status: the name, how many bytes
 * (UTF-8) of its `audit.jsonl` it wrote and their SHA-256. The chunk only grows, so a longer text is checked on its
 * first `bytes` bytes; anything beyond, or a chunk whose bytes do not match, is not the sidecar's record.
 */
export const AuditChunkDigestSchema = z.strictObject({
  name: z.string().max(253).describe("The audit ConfigMap."),
  bytes: z.number().int().min(0).describe("How many bytes (UTF-8) of its key `audit.jsonl` the sidecar wrote."),
  sha256: z.string().regex(/^[0-9a-f]{64}$/).describe("SHA-256 (hex) of those bytes."),
}).describe("One audit ConfigMap as the sidecar wrote it.");
/** One audit ConfigMap as the sidecar wrote it. */
export type AuditChunkDigest = z.infer<typeof AuditChunkDigestSchema>;

/**
 * The sidecar's ledger of its audit ConfigMaps (field manager `leviath-sidecar-audit`): only the Run's sidecar and
 * the controller may write a Run's status, so a ConfigMap someone else created or changed under an audit name is
 * never taken for the Run's audit.
 */
export const RunAuditStatusSchema = z.strictObject({
  chunks: z.array(AuditChunkDigestSchema).max(MAX_AUDIT_CHUNKS).describe("The audit ConfigMaps the sidecar wrote, in the order of their records."),
}).describe("The audit ConfigMaps the sidecar wrote and the digest of what it wrote in each (written by the sidecar).");
/** The sidecar's ledger of its audit ConfigMaps. */
export type RunAuditStatus = z.infer<typeof RunAuditStatusSchema>;

/** How the controller answered the last `leviath.dev/resume` request of a Run. */
export const RESUME_OUTCOMES = ["Resumed", "Unchanged", "Refused"] as const;

/**
 * A Run's resume record (owned by the controller): the answer to the last `leviath.dev/resume` value, and the
 * run-policy snapshot in force, which only a `Resumed` answer moves on.
 */
export const RunResumeStatusSchema = z.strictObject({
  token: z.string().max(253).describe("The `leviath.dev/resume` value this answers."),
  outcome: z.enum(RESUME_OUTCOMES).describe("Resumed: a new snapshot with re-resolved grants; Unchanged: the grants were already those; Refused: see message."),
  message: z.string().max(4096).describe("What the resume did or why it was refused, naming the grants added and removed."),
  at: z.string().describe("RFC 3339 time of the answer."),
  sequence: z.number().int().min(0).describe("How many re-resolved snapshots the run has had (0: only the one pinned at start)."),
  snapshot: z.string().optional().describe("The immutable ConfigMap whose `run-policy.json` the sidecar enforces (absent: `<run>-policy`, pinned at start)."),
  snapshotSha256: z.string().regex(/^[0-9a-f]{64}$/).optional().describe("SHA-256 of that `run-policy.json`; the sidecar refuses a snapshot that does not match."),
  policyGeneration: z.number().int().min(0).optional().describe("The LeviathPolicy generation the grants were re-resolved against."),
  added: z.array(z.string()).max(256).optional().describe("Grant entries the last resume added."),
  removed: z.array(z.string()).max(256).optional().describe("Grant entries the last resume removed (the policy no longer grants them)."),
});
/** A Run's resume record. */
export type RunResumeStatus = z.infer<typeof RunResumeStatusSchema>;

/** One run-policy snapshot of a policy rollout, resolved for this Run from a later LeviathPolicy generation. */
const RolloutSnapshotSchema = z.strictObject({
  generation: z.number().int().min(0).describe("The LeviathPolicy generation it was resolved from."),
  snapshot: z.string().describe("The ConfigMap whose `run-policy.json` holds it."),
  snapshotSha256: z.string().regex(/^[0-9a-f]{64}$/).describe("SHA-256 of that `run-policy.json`; the sidecar uses no snapshot that does not match."),
});

/**
 * A policy rollout as it reaches a running Run (docs/operations.md, "Rolling out a policy"): the generation in force
 * when it is later than the one the Run was pinned to (enforced beside the pinned snapshot: each call gets the
 * stricter decision), and the candidate out in warn or audit mode (decided, never enforced; differences recorded).
 */
export const RunPolicyRolloutSchema = z.strictObject({
  enforced: RolloutSnapshotSchema.optional().describe("The LeviathPolicy generation in force, later than the pinned one: a call gets the stricter of the two decisions."),
  candidate: RolloutSnapshotSchema.extend({
    enforcement: z.enum(["warn", "audit"]).describe("The candidate's mode: warn also reports its would-flips on the Run."),
  }).optional().describe("The candidate generation: every call is decided under it too, and each difference recorded."),
});
/** A Run's policy rollout. */
export type RunPolicyRollout = z.infer<typeof RunPolicyRolloutSchema>;

/**
 * The Run status. The controller owns the identity, phase, pods and conditions; the sidecar (field manager
 * `leviath-sidecar`) owns `stage`, `taint`, `gateDecisions`, `pendingApprovals`, `result`, `audit`, `mcpServers`, `runtimeWarnings` and `policyFlips`.
 */
export const RunStatusSchema = z.strictObject({
  observedGeneration: z.number().int().min(0).optional().describe("The metadata.generation this status is about."),
  phase: z.enum(RUN_PHASES).optional().describe("Pending, Running, WaitingInput (a prompt waits), Succeeded, Failed, Cancelled; the last three are terminal."),
  message: z.string().max(32_768).optional().describe("Why the run is in its phase, or what went wrong last."),
  agent: z.strictObject({
    name: z.string().describe("The Agent's name."),
    generation: z.number().int().min(0).describe("Its metadata.generation when the run started."),
  }).optional().describe("The Agent generation the run is pinned to."),
  policy: z.strictObject({
    name: z.string().describe("The LeviathPolicy's name (cluster)."),
    generation: z.number().int().min(0).optional().describe("Its metadata.generation when the run started."),
  }).optional().describe("The LeviathPolicy generation the run is pinned to (absent: no policy existed)."),
  startedAt: z.string().optional().describe("RFC 3339 time the run was resolved (deadlines count from here)."),
  completedAt: z.string().optional().describe("RFC 3339 time the run reached a terminal phase."),
  enginePod: z.string().optional().describe("The engine pod (agent runtime and leviath sidecar)."),
  startedFrom: z.enum(STARTED_FROM).optional().describe("pool: the engine pod was adopted from a warm pool and bound late; cold: it was created for this Run (written only with warm pools on)."),
  workspace: z.string().optional().describe("The workspace claim the Run's pods mount (written with startedFrom): an adopted pool pod's own claim, or the Run's."),
  workspaceClaimUid: z.string().optional().describe("The uid of the workspace claim the controller created for this Run (<run>-workspace); a claim under that name with another uid is never mounted."),
  readPaths: ReadPathCountsSchema.optional(),
  sandboxes: z.array(RunSandboxStatusSchema).optional().describe("The run's sandbox pods, one per distinct sandbox."),
  stage: z.string().optional().describe("The stage the agent is in (written by the sidecar)."),
  taint: z.strictObject({
    tracking: z.boolean().describe("Whether taint tracking is on for this run."),
    level: z.enum(["public", "internal", "private"]).describe("The context's current taint: the most sensitive live entry."),
  }).optional().describe("Taint tracking state (written by the sidecar)."),
  gateDecisions: z.record(z.string(), z.number().int().min(0)).optional()
    .describe("Gate decisions so far by decision source (read_path, auto_allow, auto_block, user_allow_once, ...), as the metric labels them (written by the sidecar)."),
  pendingApprovals: z.array(PendingApprovalSchema).max(32).optional().describe("Prompts waiting for an Approval, at most 32 (written by the sidecar)."),
  result: RunResultSchema.optional(),
  audit: RunAuditStatusSchema.optional(),
  mcpServers: z.array(z.strictObject({
    name: z.string().describe("The server's LeviathPolicy name."),
    offered: z.boolean().describe("Whether its tools are offered (it was connected to and listed them)."),
    tools: z.number().int().min(0).describe("How many tools it listed."),
    message: z.string().max(1024).optional().describe("Why it is not offered: a missing Secret key, a failed connect."),
  })).max(64).optional().describe("The admin's MCP servers as the sidecar reaches them (written by the sidecar); McpServersReady sums them up."),
  runtimeWarnings: z.array(z.string().max(512)).max(32).optional()
    .describe("What the agent runtime said it does not honour (a stage key it ignores, a model setting it does not pass on, a flag that lets the model end the run early), at most 32 lines, written by the sidecar while the run goes on."),
  agentExit: z.strictObject({
    exitCode: z.number().int().describe("The agent container's exit code."),
    reason: z.string().max(1024).optional().describe("The kubelet's reason (Completed, Error, OOMKilled, ...)."),
    message: z.string().max(4096).optional().describe("The container's termination message."),
  }).optional().describe("How the agent container ended (from the kubelet's report)."),
  snapshotSha256: z.string().regex(/^[0-9a-f]{64}$/).optional()
    .describe("SHA-256 of the start snapshot (ConfigMap <run>-policy: every data key and value, in key order) as the controller created it; a snapshot whose bytes no longer match fails the Run (PolicySnapshotInvalid), whoever owns it."),
  resume: RunResumeStatusSchema.optional().describe("The last resume request's answer and the run-policy snapshot in force (docs/controller.md, Resuming a Run)."),
  policyRollout: RunPolicyRolloutSchema.optional().describe("A later LeviathPolicy generation reaching this running Run: the one in force and a warn or audit candidate (docs/operations.md, Rolling out a policy)."),
  policyFlips: z.strictObject({
    generation: z.number().int().min(0).describe("The candidate generation they were counted against."),
    count: z.number().int().min(0).describe("Calls whose decision would flip under the candidate."),
    last: z.string().max(1024).optional().describe("The last would-flip: tool, target, decision now -> under the candidate, and what differs."),
  }).optional().describe("Would-flips of a warn candidate so far (written by the sidecar; kubectl leviath why shows them)."),
  conditions: z.array(ConditionSchema).optional()
    .describe("PolicyResolved, SandboxReady, NetworkIsolated, AwaitingApproval, CredentialsReady, PodsWaiting (only while a pod cannot be scheduled or a claim is unbound), PolicyWouldFlip (only while a warn candidate LeviathPolicy would decide calls otherwise), PodSecurityEnforced, Completed, and Ready/Stalled/Reconciling for kstatus and kubectl wait."),
}).describe("What the run is doing; the controller and the run's sidecar each own their part.");
/** The Run status. */
export type RunStatus = z.infer<typeof RunStatusSchema>;
