import type { RunPolicy } from "../../api/run-policy.ts";
import { CONDITION, type RunPhase, type RunResumeStatus, type RunStatus } from "../../api/status.ts";
import { buildChildNames } from "../../sandbox/names.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { computeReadPathCounts } from "../../policy/agent-findings.ts";
import { buildConditions, type ConditionDecision } from "../conditions.ts";
import { decideRunReadiness } from "../readiness.ts";
import type { RunDecision } from "./run-decision.ts";

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
  "observedGeneration", "phase", "message", "agent", "policy", "startedAt", "completedAt", "enginePod", "readPaths", "sandboxes", "agentExit", "snapshotSha256", "resume", "conditions",
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

/** The status of a Run that has its snapshot: what the decision says, plus the pinned identity. */
export function buildRunStatus(name: string, generation: number, snapshot: RunSnapshot, decision: RunDecision, previous: RunStatus | undefined, nowIso: string, resumed?: Resumed): RunStatus {
  const pinned = snapshot.controller;
  // After a resume the counts are those of the grants in force, as upstream refreshes meta.json's.
  const rp = resumed?.readPaths ?? snapshot.runPolicy.readPaths;
  const readPaths = computeReadPathCounts({ agentName: snapshot.runPolicy.agent.key, declared: rp.declared, granted: rp.granted, allowBlueprintReadPaths: rp.allowBlueprintReadPaths });
  return {
    observedGeneration: generation,
    phase: decision.phase,
    ...(decision.message !== undefined ? { message: decision.message } : {}),
    agent: { name: pinned.agent.name, generation: pinned.agent.generation },
    policy: { name: pinned.policy.name, ...(pinned.policy.generation !== undefined ? { generation: pinned.policy.generation } : {}) },
    startedAt: decision.startedAt,
    ...(decision.completedAt !== undefined ? { completedAt: decision.completedAt } : {}),
    ...(decision.lifecycle !== "stopped" ? { enginePod: buildChildNames(name).enginePod } : {}),
    ...(readPaths ? { readPaths } : {}),
    sandboxes: decision.sandboxStatus,
    ...(decision.agentExit ? { agentExit: decision.agentExit } : {}),
    ...(snapshot.sha256 ?? previous?.snapshotSha256 ? { snapshotSha256: (snapshot.sha256 ?? previous?.snapshotSha256)! } : {}),
    ...(resumed?.record ? { resume: resumed.record } : {}),
    conditions: buildConditions(previous?.conditions, [...decision.conditions, ...decideRunReadiness(decision.phase, decision.conditions)], nowIso, generation),
  };
}

/**
 * The status of a Run that cannot be resolved (yet): Pending while it waits for something outside it (its Agent,
 * a valid policy), Failed when its own spec is invalid. No children exist in either case.
 */
export function buildBlockedRunStatus(generation: number, previous: RunStatus | undefined, phase: Extract<RunPhase, "Pending" | "Failed">, reason: string, message: string, nowIso: string, snapshotSha256?: string): RunStatus {
  const digest = snapshotSha256 ?? previous?.snapshotSha256;
  const decided: ConditionDecision = { type: CONDITION.policyResolved, status: "False", reason, message };
  return {
    observedGeneration: generation,
    phase,
    message,
    // What the run was pinned to stays on record: it is also what forbids resolving it a second time.
    ...(previous?.agent ? { agent: previous.agent } : {}),
    ...(previous?.policy ? { policy: previous.policy } : {}),
    ...(previous?.startedAt ? { startedAt: previous.startedAt } : {}),
    ...(phase === "Failed" ? { completedAt: previous?.completedAt ?? nowIso } : {}),
    // The start snapshot accepted before the run was stopped: later passes check it by this digest.
    ...(digest ? { snapshotSha256: digest } : {}),
    ...(previous?.resume ? { resume: previous.resume } : {}),
    conditions: buildConditions(previous?.conditions, [decided, ...decideRunReadiness(phase, [decided])], nowIso, generation),
  };
}
