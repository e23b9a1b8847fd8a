// How a Run ends: the agent container's exit (read from the kubelet's report on the engine pod), a whole-run
// deadline, a cancellation or a sandbox that cannot start. Pure: the reconciler passes in what it observed.
import type { RunSpec } from "../../api/run.ts";
import { CONDITION, REASON, type RunPhase, type RunStatus } from "../../api/status.ts";
import type { ConditionDecision } from "../conditions.ts";

/** How a container ended, as the kubelet reports it (`state.terminated`). */
export interface ContainerExit {
  exitCode: number;
  reason?: string;
  message?: string;
}

/** What the controller sees of one pod. */
export interface ObservedPod {
  phase?: string;
  ready: boolean;
  /** The agent container's termination (engine pod only). */
  agent?: ContainerExit;
  /** The pod's own reason and message (an eviction, a node shutdown). */
  reason?: string;
  message?: string;
  /** The scheduler's reason and message when it could not place the pod (PodScheduled=False). */
  unschedulable?: string;
}

/** The longest message kept from a container's termination message (the kubelet caps it at 4 KiB too). */
const MAX_EXIT_MESSAGE = 4096;

/** When the whole-run deadline passes (ms since the epoch), if the Run has one. */
export function computeRunDeadlineMs(spec: RunSpec, startedAt: string): number | undefined {
  const seconds = spec.deadlines.activeDeadlineSeconds;
  return seconds === undefined ? undefined : Date.parse(startedAt) + seconds * 1000;
}

/** When a finished Run is to be deleted (ms since the epoch), if it has a TTL. */
export function computeTtlExpiryMs(spec: RunSpec, status: RunStatus | undefined): number | undefined {
  const ttl = spec.ttlSecondsAfterFinished;
  if (ttl === undefined || status?.completedAt === undefined) return undefined;
  return Date.parse(status.completedAt) + ttl * 1000;
}

function describeExit(exit: ContainerExit): string {
  const why = exit.reason ? ` (${exit.reason})` : "";
  const said = exit.message ? `: ${exit.message.slice(0, MAX_EXIT_MESSAGE)}` : "";
  return `the agent container exited with code ${exit.exitCode}${why}${said}`;
}

/** The phase the engine pod's end means, if it ended. */
export function decideEnginePhase(engine: ObservedPod | undefined): Extract<RunPhase, "Succeeded" | "Failed"> | undefined {
  if (engine?.phase === "Succeeded") return "Succeeded";
  if (engine?.phase === "Failed") return "Failed";
  return undefined;
}

/** What ended a Run now becoming terminal, as the `Completed` condition says it. */
export interface CompletionCause {
  cancelled: boolean;
  deadlineExceeded: boolean;
  spec: RunSpec;
  engine: ObservedPod | undefined;
  /** The SandboxReady message when a sandbox could not start. */
  sandboxFailure?: string;
}

/** The `Completed` condition of a Run that just ended, and the agent's exit when that is what ended it. */
export function decideCompletion(cause: CompletionCause): { condition: ConditionDecision; agentExit?: ContainerExit } {
  const done = (reason: string, message: string): ConditionDecision => ({ type: CONDITION.completed, status: "True", reason, message });
  if (cause.cancelled) return { condition: done(REASON.cancelled, "the Run was cancelled (spec.desiredState: Cancelled); its pods are deleted") };
  const enginePhase = decideEnginePhase(cause.engine);
  const exit = cause.engine?.agent;
  if (enginePhase === "Succeeded") return { condition: done(REASON.agentSucceeded, describeExit(exit ?? { exitCode: 0 })), agentExit: exit ?? { exitCode: 0 } };
  if (enginePhase === "Failed" && exit !== undefined) return { condition: done(REASON.agentFailed, describeExit(exit)), agentExit: exit };
  if (enginePhase === "Failed") {
    const why = cause.engine?.reason ? ` (${cause.engine.reason})` : "";
    return { condition: done(REASON.enginePodFailed, `the engine pod failed${why}${cause.engine?.message ? `: ${cause.engine.message}` : ""}`) };
  }
  if (cause.deadlineExceeded) {
    return { condition: done(REASON.deadlineExceeded, `the run exceeded spec.deadlines.activeDeadlineSeconds (${cause.spec.deadlines.activeDeadlineSeconds}s since it started); its pods are deleted`) };
  }
  return { condition: done(REASON.sandboxUnavailable, cause.sandboxFailure ?? "a sandbox could not start") };
}

/** The `Completed` condition of a Run still in flight. */
export function buildInFlightCondition(phase: RunPhase): ConditionDecision {
  return { type: CONDITION.completed, status: "False", reason: REASON.running, message: `the run is ${phase}` };
}
