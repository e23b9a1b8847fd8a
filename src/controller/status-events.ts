// Which status transitions become Events: every change of `Ready` (its status or reason), so that `kubectl get
// events` and `kubectl describe` tell an object's story, and the moments a Run becomes less protected than its
// Agent asked for (a fallback to the engine pod, a NetworkPolicy not enforced or restored, a namespace that
// does not enforce Pod Security `restricted`), and the first call a warn candidate policy would decide otherwise. Pure: the reconcilers record what this returns after writing status.
import { CONDITION, REASON, type Condition } from "../api/status.ts";
import type { EventNote, EventSink, ObjectReference } from "../kube/event-recorder.ts";

/** Ready reasons of normal progress; every other reason a Ready=False condition gives is a Warning. */
const NORMAL_READY_REASONS: ReadonlySet<string> = new Set([REASON.running, REASON.pendingApproval, REASON.waiting, REASON.cancelled]);

/** Other conditions worth an Event, and the states that make them one (always a Warning). */
const WARNING_STATES: Readonly<Record<string, (c: Condition) => boolean>> = {
  [CONDITION.sandboxReady]: (c) => c.reason === REASON.fellBackToHost,
  [CONDITION.networkIsolated]: (c) => c.status === "False" || c.reason === REASON.networkPolicyRestored,
  [CONDITION.podSecurityEnforced]: (c) => c.status === "False",
  // A warn candidate's first would-flip on the Run (docs/operations.md, "Rolling out a policy").
  [CONDITION.policyWouldFlip]: (c) => c.status === "True",
};

/** The status and reason of a condition, as a transition compares them. */
type ConditionState = Pick<Condition, "status" | "reason">;

/** The Events a status change is worth, in condition order; `action` says what the controller was doing. */
export function computeTransitionEvents(previous: (type: string) => ConditionState | undefined, next: readonly Condition[], action: string): EventNote[] {
  const out: EventNote[] = [];
  for (const c of next) {
    const before = previous(c.type);
    if (before !== undefined && before.status === c.status && before.reason === c.reason) continue;
    if (c.type === CONDITION.ready) {
      const normal = c.status === "True" || NORMAL_READY_REASONS.has(c.reason);
      out.push({ type: normal ? "Normal" : "Warning", reason: c.reason, action, note: c.message });
    } else if (WARNING_STATES[c.type]?.(c)) {
      out.push({ type: "Warning", reason: c.reason, action, note: c.message });
    }
  }
  return out;
}

/** The `action` of the Events of Agent and policy validation. */
export const VALIDATE_ACTION = "Validate";

/** Records the Events of an object's status change. */
export type TransitionRecorder = (regarding: ObjectReference, previous: readonly Condition[] | undefined, next: readonly Condition[] | undefined, action: string) => void;

/** Objects whose last reported conditions are remembered at most (the least recently reported go first). */
const MAX_REMEMBERED = 16_384;

/** The Events a kind's status change is worth (default: {@link computeTransitionEvents}, for Agents, Runs and the policy). */
export type TransitionEvents = typeof computeTransitionEvents;

/**
 * A recorder that remembers what it last reported per object uid: a status written again because the cache
 * still held the old one is not a second transition, while a real return to an earlier state is (and becomes a
 * series on its first Event).
 */
export function createTransitionRecorder(sink: EventSink | undefined, computeEvents: TransitionEvents = computeTransitionEvents): TransitionRecorder {
  const reported = new Map<string, Map<string, ConditionState>>();
  return (regarding, previous, next, action) => {
    if (!sink || !next) return;
    const memory = regarding.uid === undefined ? undefined : reported.get(regarding.uid) ?? new Map<string, ConditionState>();
    const before = (type: string) => memory?.get(type) ?? previous?.find((p) => p.type === type);
    for (const event of computeEvents(before, next, action)) sink.record(regarding, event);
    if (memory === undefined || regarding.uid === undefined) return;
    for (const c of next) memory.set(c.type, { status: c.status, reason: c.reason });
    reported.delete(regarding.uid);
    reported.set(regarding.uid, memory);
    if (reported.size > MAX_REMEMBERED) reported.delete(reported.keys().next().value!);
  };
}
