// The summary conditions kstatus (Flux, Argo CD's gitops-engine, `kubectl wait`, cli-utils) reads: `Ready`,
// plus `Stalled` (kstatus: Failed) and `Reconciling` (kstatus: InProgress), each present only while True, as
// the abnormal-true convention of kstatus asks. They are derived from the conditions already decided, never
// decided on their own, so they cannot disagree with them.
import { CONDITION, REASON, type RunPhase } from "../api/status.ts";
import type { ConditionDecision } from "./conditions.ts";

/** Reasons that wait for someone to change something (a spec, the Agent, the policy, a Secret's label). */
const STALLED_REASONS: ReadonlySet<string> = new Set([
  REASON.invalidSpec, REASON.invalidPolicy, REASON.refusedByPolicy, REASON.secretNotOptedIn, REASON.blueprintFilesNotOptedIn, REASON.snapshotInvalid, REASON.credentialsOnHost,
]);

function summary(ready: ConditionDecision, progress: "stalled" | "reconciling" | "none"): ConditionDecision[] {
  const extra: ConditionDecision[] = [];
  if (progress === "stalled") extra.push({ type: CONDITION.stalled, status: "True", reason: ready.reason, message: ready.message });
  if (progress === "reconciling") extra.push({ type: CONDITION.reconciling, status: "True", reason: ready.reason, message: ready.message });
  return [ready, ...extra];
}

/**
 * Ready (and Stalled) of an Agent or the LeviathPolicy from its `Valid` condition: Ready mirrors it; a refused or
 * invalid spec is also Stalled; Unknown (no valid policy to judge by) is neither.
 */
export function decideValidReadiness(valid: ConditionDecision): ConditionDecision[] {
  const ready: ConditionDecision = { type: CONDITION.ready, status: valid.status, reason: valid.reason, message: valid.message };
  return summary(ready, valid.status === "False" ? "stalled" : "none");
}

const find = (decided: readonly ConditionDecision[], type: string) => decided.find((c) => c.type === type);

/** Why a Pending run is not running yet: the first condition that holds it, else the pods it waits for. */
function pendingCause(decided: readonly ConditionDecision[]): { reason: string; message: string } {
  // PodsWaiting holds the run while True (abnormal-true); the others while not True.
  const holds = (c: ConditionDecision) => (c.type === CONDITION.podsWaiting) === (c.status === "True");
  for (const type of [CONDITION.policyResolved, CONDITION.credentialsReady, CONDITION.podsWaiting, CONDITION.sandboxReady]) {
    const c = find(decided, type);
    if (c && holds(c)) return { reason: c.reason, message: c.message };
  }
  return { reason: REASON.waiting, message: "waiting for the engine pod to run" };
}

/**
 * Ready of a Run, with Stalled or Reconciling: True once Succeeded (reason and message of `Completed`); False
 * otherwise, with the reason that explains the phase. Failed and Cancelled are Stalled (terminal: a Run is never
 * started again); a Pending run is Stalled when it waits for someone to fix something, Reconciling otherwise.
 */
export function decideRunReadiness(phase: RunPhase, decided: readonly ConditionDecision[]): ConditionDecision[] {
  return READINESS_BY_PHASE[phase](decided, phase);
}

const ready = (status: ConditionDecision["status"], reason: string, message: string): ConditionDecision => ({ type: CONDITION.ready, status, reason, message });

/** Ready, Stalled and Reconciling for each phase, from the conditions decided (a table: every phase has its row). */
const READINESS_BY_PHASE: Record<RunPhase, (decided: readonly ConditionDecision[], phase: RunPhase) => ConditionDecision[]> = {
  Succeeded: (decided) => {
    const completed = find(decided, CONDITION.completed);
    return summary(ready("True", completed?.reason ?? REASON.agentSucceeded, completed?.message ?? "the run succeeded"), "none");
  },
  Failed: (decided, phase) => decideEndedReadiness(decided, phase),
  Cancelled: (decided, phase) => decideEndedReadiness(decided, phase),
  Running: () => summary(ready("False", REASON.running, "the agent is running"), "reconciling"),
  WaitingInput: (decided) => summary(ready("False", REASON.pendingApproval, find(decided, CONDITION.awaitingApproval)?.message ?? "a prompt waits for an Approval"), "reconciling"),
  Pending: (decided) => {
    const cause = pendingCause(decided);
    return summary(ready("False", cause.reason, cause.message), STALLED_REASONS.has(cause.reason) ? "stalled" : "reconciling");
  },
};

/** A Failed or Cancelled Run: never started again, so Stalled, with the condition that explains the end. */
function decideEndedReadiness(decided: readonly ConditionDecision[], phase: RunPhase): ConditionDecision[] {
  const cause = endedCause(decided);
  return summary(ready("False", cause?.reason ?? phase, `the run is ${phase}: ${cause?.message ?? "it ended"}`), "stalled");
}

/** Why a Run ended without success: its Completed condition when True, else a policy that failed to resolve. */
function endedCause(decided: readonly ConditionDecision[]): ConditionDecision | undefined {
  const completed = find(decided, CONDITION.completed);
  if (completed?.status === "True") return completed;
  const resolved = find(decided, CONDITION.policyResolved);
  return resolved?.status === "False" ? resolved : undefined;
}
