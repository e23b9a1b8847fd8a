import type { StartedFrom } from "../../api/pools.ts";
import type { RunPolicy } from "../../api/run-policy.ts";
import { CONDITION, type RunPhase, type RunPolicyRollout, type RunResumeStatus, type RunStatus } from "../../api/status.ts";
import { buildChildNames } from "../../sandbox/names.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { computeReadPathCounts } from "../../policy/agent-findings.ts";
import { buildConditions, type ConditionDecision } from "../conditions.ts";
import { decideRunReadiness } from "../readiness.ts";
import type { RunDecision } from "./run-decision.ts";
import { decideWouldFlipCondition } from "./would-flip-condition.ts";

/** A resume's part of the status: the record to write, and the read paths in force when a resume moved them. */
export interface Resumed {
  record: RunResumeStatus | undefined;
  readPaths?: RunPolicy["readPaths"] | undefined;
}

/**
 * The status fields the controller owns; the sidecar owns the rest (stage, taint, gate counts, approvals, result).
 * Every field {@link buildRunStatus} writes must be here: one missing is never "the same" as the cached status, so
 * every pass would apply the status again (a no-op on the server, but a request and a worker's round trip).
 */
export const CONTROLLER_RUN_FIELDS = [
  "observedGeneration", "phase", "message", "agent", "policy", "startedAt", "completedAt", "enginePod", "startedFrom", "workspace", "readPaths", "sandboxes", "agentExit", "snapshotSha256", "resume", "policyRollout", "workspaceClaimUid", "conditions",
] as const satisfies readonly (keyof RunStatus)[];

/** The controller-owned part of a status, for comparing before writing. */
export function pickControllerFields(status: RunStatus | undefined): Partial<RunStatus> {
  const out: Record<string, unknown> = {};
  for (const key of CONTROLLER_RUN_FIELDS) if (status?.[key] !== undefined) out[key] = status[key];
  return out as Partial<RunStatus>;
}

/**
 * The Run's status with this controller's fields taken from `written` (what it last wrote) and every other field
 * (the sidecar's) from `cached`: for a pass whose cached Run has not seen that write yet.
 */
export function overlayControllerFields(cached: RunStatus | undefined, written: RunStatus): RunStatus {
  const out: Record<string, unknown> = { ...cached };
  for (const key of CONTROLLER_RUN_FIELDS) delete out[key];
  return { ...out, ...written } as RunStatus;
}

/** Where a status is computed from, besides its decision: the Run's generation, its status before and now. */
export interface StatusBasis {
  readonly generation: number;
  readonly previous: RunStatus | undefined;
  readonly nowIso: string;
  /** The uid of the workspace claim the operator made for the Run (own-claim.ts), once it has one. */
  readonly workspaceClaimUid?: string | undefined;
}

/** `status.workspaceClaimUid`: kept once recorded, whatever else the status says. */
const claimUidOf = (basis: StatusBasis): Pick<RunStatus, "workspaceClaimUid"> => {
  const uid = basis.workspaceClaimUid ?? basis.previous?.workspaceClaimUid;
  return uid ? { workspaceClaimUid: uid } : {};
};

/** Which engine pod the Run has and where it came from (`from` only with warm pools on), and the claim its pods mount. */
export interface EngineBinding {
  readonly pod: string;
  readonly from?: StartedFrom | undefined;
  readonly workspace: string;
  /**
   * A pool pod carrying `leviath.dev/pool-pair`: the Run's sandbox pods are that pod's, named after it and scheduled
   * beside it by that label (docs/controller.md, "Warm sandbox pods"); one adopted before pool pods carried it keeps
   * the Run's own names.
   */
  readonly paired?: boolean | undefined;
}

/** The status of a Run that has its snapshot: what the decision says, plus the pinned identity. */
export function buildRunStatus(basis: StatusBasis, run: { name: string; snapshot: RunSnapshot; decision: RunDecision; resumed?: Resumed | undefined; engine?: EngineBinding | undefined; rollout?: RunPolicyRollout | undefined }): RunStatus {
  const { generation, previous, nowIso } = basis;
  const { snapshot, decision, resumed, engine } = run;
  const pinned = snapshot.controller;
  // After a resume the counts are those of the grants in force, as upstream refreshes meta.json's.
  const rp = resumed?.readPaths ?? snapshot.runPolicy.readPaths;
  const readPaths = computeReadPathCounts({ agentName: snapshot.runPolicy.agent.key, declared: rp.declared, granted: rp.granted, allowBlueprintReadPaths: rp.allowBlueprintReadPaths });
  const digest = snapshot.sha256 ?? previous?.snapshotSha256;
  return {
    observedGeneration: generation,
    phase: decision.phase,
    ...(decision.message !== undefined ? { message: decision.message } : {}),
    agent: { name: pinned.agent.name, generation: pinned.agent.generation },
    policy: { name: pinned.policy.name, ...(pinned.policy.generation !== undefined ? { generation: pinned.policy.generation } : {}) },
    startedAt: decision.startedAt,
    ...(decision.completedAt !== undefined ? { completedAt: decision.completedAt } : {}),
    ...engineFields(run.name, decision, engine),
    ...(readPaths ? { readPaths } : {}),
    sandboxes: decision.sandboxStatus,
    ...(decision.agentExit ? { agentExit: decision.agentExit } : {}),
    ...(digest ? { snapshotSha256: digest } : {}),
    ...(resumed?.record ? { resume: resumed.record } : {}),
    ...(run.rollout ? { policyRollout: run.rollout } : {}),
    ...claimUidOf(basis),
    conditions: buildConditions(previous?.conditions, [...decision.conditions, ...decideRunReadiness(decision.phase, decision.conditions), ...flipped(run.rollout, previous)], nowIso, generation),
  };
}

/** The PolicyWouldFlip condition, while a warn candidate would decide the Run's calls otherwise. */
function flipped(rollout: RunPolicyRollout | undefined, previous: RunStatus | undefined): ConditionDecision[] {
  const c = decideWouldFlipCondition(rollout, previous?.policyFlips);
  return c ? [c] : [];
}

/** The engine pod (none once stopped) and, with warm pools on, where it came from and the claim the Run's pods mount. */
function engineFields(name: string, decision: RunDecision, engine: EngineBinding | undefined): Pick<RunStatus, "enginePod" | "startedFrom" | "workspace"> {
  return {
    ...(decision.lifecycle !== "stopped" ? { enginePod: engine?.pod ?? buildChildNames(name).enginePod } : {}),
    ...(engine?.from !== undefined ? { startedFrom: engine.from, workspace: engine.workspace } : {}),
  };
}

/** Why a Run is blocked: its phase, the PolicyResolved reason and message, and the start snapshot accepted before, if any. */
export interface Blockage {
  readonly phase: Extract<RunPhase, "Pending" | "Failed">;
  readonly reason: string;
  readonly message: string;
  readonly snapshotSha256?: string | undefined;
}

/**
 * The status of a Run that cannot be resolved (yet): Pending while it waits for something outside it (its Agent,
 * a valid policy), Failed when its own spec is invalid. No children exist in either case.
 */
export function buildBlockedRunStatus(basis: StatusBasis, blocked: Blockage): RunStatus {
  const { generation, previous, nowIso } = basis;
  const { phase, reason, message } = blocked;
  const digest = blocked.snapshotSha256 ?? previous?.snapshotSha256;
  const decided: ConditionDecision = { type: CONDITION.policyResolved, status: "False", reason, message };
  return {
    observedGeneration: generation,
    phase,
    message,
    // What the run was pinned to stays on record: it is also what forbids resolving it a second time.
    ...keptPins(previous),
    ...(phase === "Failed" ? { completedAt: previous?.completedAt ?? nowIso } : {}),
    // The start snapshot accepted before the run was stopped: later passes check it by this digest.
    ...(digest ? { snapshotSha256: digest } : {}),
    ...(previous?.resume ? { resume: previous.resume } : {}),
    ...claimUidOf(basis),
    conditions: buildConditions(previous?.conditions, [decided, ...decideRunReadiness(phase, [decided])], nowIso, generation),
  };
}

/** The Agent, policy and start time a blocked Run was pinned to before, as they were. */
function keptPins(previous: RunStatus | undefined): Pick<RunStatus, "agent" | "policy" | "startedAt"> {
  return {
    ...(previous?.agent ? { agent: previous.agent } : {}),
    ...(previous?.policy ? { policy: previous.policy } : {}),
    ...(previous?.startedAt ? { startedAt: previous.startedAt } : {}),
  };
}
