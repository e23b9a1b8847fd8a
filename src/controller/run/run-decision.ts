import type { RunSpec } from "../../api/run.ts";
import { formatApiTime } from "../../api/time.ts";
import { CONDITION, REASON, TERMINAL_PHASES, type NetworkEnforcementStatus, type RunPhase, type RunStatus } from "../../api/status.ts";
import { buildChildNames } from "../../sandbox/names.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { hasHostStages, type SandboxPlan } from "../../sandbox/sandbox-plan.ts";
import type { ConditionDecision } from "../conditions.ts";
import { buildInFlightCondition, computeRunDeadlineMs, decideCompletion, decideEnginePhase, type ContainerExit, type ObservedPod } from "./run-completion.ts";
import { decideNetworkCondition, ENFORCEMENT_UNCHECKED } from "./network-condition.ts";
import { decideMcpCondition } from "./mcp-secrets.ts";
import { decideAwaitingCondition } from "./awaiting-condition.ts";

export type { ObservedPod } from "./run-completion.ts";

/** Everything a Run's next state is decided from. */
export interface RunObservation {
  name: string;
  spec: RunSpec;
  previous: RunStatus | undefined;
  snapshot: RunSnapshot;
  plan: readonly SandboxPlan[];
  pods: ReadonlyMap<string, ObservedPod>;
  hasRuntimeClass: (name: string) => boolean;
  /** PodSecurityEnforced of the Run's namespace (absent: not decided, as in unit tests of other conditions). */
  podSecurity?: ConditionDecision | undefined;
  /** CredentialsReady as read live from the Secrets (absent: the run names none). */
  credentials?: ConditionDecision | undefined;
  /** PodsWaiting: a pod the scheduler could not place, a claim not bound (absent: nothing is stuck). */
  podsWaiting?: ConditionDecision | undefined;
  nowMs: number;
  nowIso: string;
  /** The Run's NetworkPolicy is not in the cache (it is re-applied this pass). */
  networkPolicyMissing?: boolean;
  /** What the operator's probe found of the cluster's NetworkPolicy enforcement. */
  networkEnforcement?: NetworkEnforcementStatus;
  /** The engine pod's name when it is not `<run>-engine`: a warm pool pod the Run adopted. */
  enginePod?: string | undefined;
}

const enginePodOf = (obs: RunObservation): string => obs.enginePod ?? buildChildNames(obs.name).enginePod;

type SandboxState = { plan: SandboxPlan; state: "ready" | "waiting" | "fallback" | "fatal"; reason?: string };

/** The decision: the phase, which children to keep, the status sections and when to look again. */
export interface RunDecision {
  phase: RunPhase;
  lifecycle: "active" | "finished" | "stopped";
  sandboxes: SandboxPlan[];
  hostExec: boolean;
  sandboxStatus: NonNullable<RunStatus["sandboxes"]>;
  conditions: ConditionDecision[];
  message?: string;
  startedAt: string;
  completedAt?: string;
  requeueAfterMs?: number;
  /** Over, and some pod still stops: keep the sidecar's identity and the NetworkPolicy until it is gone. */
  draining?: boolean;
  /** A credential Secret is missing: everything but the engine pod. */
  holdEngine?: boolean;
  agentExit?: ContainerExit;
}

function sandboxState(obs: RunObservation, plan: SandboxPlan, deadlineMs: number): SandboxState {
  const before = obs.previous?.sandboxes?.find((s) => s.signature === plan.signature);
  if (before?.fellBackToHost) return { plan, state: "fallback", reason: before.unavailableReason ?? "unavailable earlier" };
  const reason = unavailableReason(obs, plan);
  if (!reason && obs.pods.get(plan.pod)?.ready) return { plan, state: "ready" };
  if (!reason && obs.nowMs < deadlineMs) return { plan, state: "waiting" };
  // With credentials in the agent container, falling back to it would hand them to the model's commands.
  const mayFallBack = plan.onUnavailable === "warn" && obs.snapshot.controller.credentials.length === 0;
  return { plan, state: mayFallBack ? "fallback" : "fatal", reason: reason ?? notReadyReason(obs, plan) };
}

/** A sandbox pod past its deadline, and why when the scheduler said so. */
function notReadyReason(obs: RunObservation, plan: SandboxPlan): string {
  const unschedulable = obs.pods.get(plan.pod)?.unschedulable;
  return `sandbox pod '${plan.pod}' not ready within ${obs.spec.deadlines.sandboxReadySeconds}s${unschedulable ? ` (it could not be scheduled: ${unschedulable})` : ""}`;
}

/** Why a sandbox can never become ready, whatever the time: its plan's problem, a missing runtime class, an exited pod. */
function unavailableReason(obs: RunObservation, plan: SandboxPlan): string | undefined {
  if (plan.problem) return plan.problem;
  if (plan.runtimeClassName && !obs.hasRuntimeClass(plan.runtimeClassName)) return `runtime class '${plan.runtimeClassName}' does not exist`;
  const pod = obs.pods.get(plan.pod);
  if (pod?.phase === "Failed" || pod?.phase === "Succeeded") return `sandbox pod '${plan.pod}' exited (${pod.phase})`;
  return plan.problem;
}

function sandboxCondition(states: SandboxState[], deadlineMs: number): ConditionDecision {
  const type = CONDITION.sandboxReady;
  const fatal = states.filter((s) => s.state === "fatal");
  if (fatal.length) return { type, status: "False", reason: REASON.sandboxUnavailable, message: fatal.map((s) => `sandbox unavailable: ${s.reason}`).join("; ") };
  const fallback = states.filter((s) => s.state === "fallback");
  if (fallback.length) {
    return { type, status: "False", reason: REASON.fellBackToHost, message: fallback.map((s) => `sandbox unavailable (${s.reason}); falling back to host execution for stages ${s.plan.stages.join(", ")}`).join("; ") };
  }
  const waiting = states.filter((s) => s.state === "waiting");
  if (waiting.length) {
    // The deadline as a time, not a countdown: a message that changed every pass would be a status write every pass.
    const deadline = formatApiTime(deadlineMs);
    return { type, status: "False", reason: REASON.waiting, message: `waiting for sandbox pods ${waiting.map((s) => s.plan.pod).join(", ")} to be Ready (deadline ${deadline})` };
  }
  if (states.length === 0) return { type, status: "True", reason: REASON.noSandbox, message: "every stage runs in the engine pod" };
  return { type, status: "True", reason: REASON.ready, message: `${states.length} sandbox pod${states.length > 1 ? "s" : ""} Ready` };
}

function networkCondition(obs: RunObservation, states: SandboxState[], policyName: string): ConditionDecision | undefined {
  const closed = states.filter((s) => !s.plan.network);
  return decideNetworkCondition({
    policyName,
    closedStages: closed.flatMap((s) => s.plan.stages),
    fallbackStages: closed.filter((s) => s.state === "fallback").flatMap((s) => s.plan.stages),
    policyMissing: obs.networkPolicyMissing ?? false,
    enforcement: obs.networkEnforcement ?? ENFORCEMENT_UNCHECKED,
    previous: obs.previous?.conditions?.find((c) => c.type === CONDITION.networkIsolated),
    nowIso: obs.nowIso,
  });
}

function isPastDeadline(obs: RunObservation, startedAt: string): boolean {
  const deadline = computeRunDeadlineMs(obs.spec, startedAt);
  return deadline !== undefined && obs.nowMs >= deadline;
}

function phaseOf(obs: RunObservation, states: SandboxState[], engine: ObservedPod | undefined, startedAt: string): RunPhase {
  if (obs.spec.desiredState === "Cancelled") return "Cancelled";
  const ended = decideEnginePhase(engine);
  if (ended) return ended;
  if (isPastDeadline(obs, startedAt)) return "Failed";
  if (states.some((s) => s.state === "fatal")) return "Failed";
  if (obs.credentials?.status === "False") return "Pending";
  const ready = states.every((s) => s.state === "ready" || s.state === "fallback");
  if (!ready || engine?.phase !== "Running") return "Pending";
  return (obs.previous?.pendingApprovals?.length ?? 0) > 0 ? "WaitingInput" : "Running";
}

/** What both the live and the terminal decision start from. */
interface DecisionBasis {
  readonly obs: RunObservation;
  readonly phase: RunPhase;
  readonly states: SandboxState[];
  /** When the sandbox pods must be Ready by (epoch ms). */
  readonly deadlineMs: number;
  readonly resolved: ConditionDecision;
  readonly sandboxStatus: RunDecision["sandboxStatus"];
  readonly startedAt: string;
  readonly engine: ObservedPod | undefined;
}

/**
 * Decide a Run's next state from what is observed. A terminal phase is never left; sandbox pods are kept only
 * while the run is live; `onUnavailable` turns a sandbox that cannot start (no image, missing runtime class,
 * exited, not Ready by the deadline) into a failure (`error`) or a fallback to the engine pod (`warn`).
 */
export function decideRun(obs: RunObservation): RunDecision {
  const startedAt = obs.previous?.startedAt ?? obs.nowIso;
  const deadlineMs = Date.parse(startedAt) + obs.spec.deadlines.sandboxReadySeconds * 1000;
  const engine = obs.pods.get(enginePodOf(obs));
  const previousPhase = obs.previous?.phase;
  const states = obs.plan.map((p) => sandboxState(obs, p, deadlineMs));
  const phase = previousPhase && TERMINAL_PHASES.includes(previousPhase) ? previousPhase : phaseOf(obs, states, engine, startedAt);
  const basis: DecisionBasis = {
    obs, phase, states, deadlineMs, startedAt, engine,
    resolved: resolvedCondition(obs.snapshot.controller),
    sandboxStatus: states.map(describeSandbox),
  };
  return TERMINAL_PHASES.includes(phase) ? decideTerminal(basis) : decideActive(basis);
}

/** PolicyResolved: what the Run is pinned to. */
function resolvedCondition(pinned: RunSnapshot["controller"]): ConditionDecision {
  return {
    type: CONDITION.policyResolved, status: "True", reason: REASON.resolved,
    message: `pinned to Agent '${pinned.agent.name}' generation ${pinned.agent.generation} and LeviathPolicy ${pinned.policy.generation !== undefined ? `generation ${pinned.policy.generation}` : "defaults (none existed)"}`,
  };
}

/** One sandbox's entry in `status.sandboxes`. */
function describeSandbox(s: SandboxState): RunDecision["sandboxStatus"][number] {
  return {
    signature: s.plan.signature, pod: s.plan.pod, kind: s.plan.kind,
    ...(s.plan.image !== undefined ? { image: s.plan.image } : {}),
    network: s.plan.network,
    ...(s.plan.runtimeClassName !== undefined ? { runtimeClassName: s.plan.runtimeClassName } : {}),
    stages: s.plan.stages,
    ready: s.state === "ready",
    ...(s.state === "fallback" ? { fellBackToHost: true } : {}),
    ...(s.reason !== undefined ? { unavailableReason: s.reason } : {}),
  };
}

/** A live Run: the sandboxes to keep, every condition, and when to look again (a deadline, a missing Secret). */
function decideActive(basis: DecisionBasis): RunDecision {
  const { obs, phase, states, deadlineMs, startedAt } = basis;
  const network = networkCondition(obs, states, buildChildNames(obs.name).networkPolicy);
  const waiting = states.some((s) => s.state === "waiting");
  const wakeAt = [waiting ? deadlineMs : undefined, computeRunDeadlineMs(obs.spec, startedAt)].filter((t): t is number => t !== undefined);
  // Secrets are not watched: a missing one is looked for again every few seconds.
  const holdEngine = obs.credentials?.status === "False";
  const mcp = decideMcpCondition(obs.snapshot.runPolicy.mcpServers, obs.snapshot.controller.mcpSecrets, obs.previous?.mcpServers);
  if (holdEngine) wakeAt.push(obs.nowMs + CREDENTIAL_RECHECK_MS);
  return {
    phase,
    lifecycle: "active",
    sandboxes: states.filter((s) => s.state === "ready" || s.state === "waiting").map((s) => s.plan),
    hostExec: hasHostStages(obs.snapshot.runPolicy) || states.some((s) => s.state === "fallback"),
    sandboxStatus: basis.sandboxStatus,
    conditions: [
      basis.resolved,
      sandboxCondition(states, deadlineMs),
      ...(network ? [network] : []),
      decideAwaitingCondition(obs.name, obs.previous?.pendingApprovals),
      ...(obs.credentials ? [obs.credentials] : []),
      ...(obs.podsWaiting ? [obs.podsWaiting] : []),
      ...(mcp ? [mcp] : []),
      ...(obs.podSecurity ? [obs.podSecurity] : []),
      buildInFlightCondition(phase),
    ],
    startedAt,
    ...(holdEngine ? { holdEngine } : {}),
    ...(wakeAt.length > 0 ? { requeueAfterMs: Math.max(1, Math.min(...wakeAt) - obs.nowMs) } : {}),
  };
}

/** How often a Run waiting for a credential Secret looks for it again. */
export const CREDENTIAL_RECHECK_MS = 5000;

const copyCondition = (c: ConditionDecision): ConditionDecision => ({ type: c.type, status: c.status, reason: c.reason, message: c.message });

/**
 * SandboxReady of a terminal Run: decided now when a sandbox failure ends it on this pass, else the unavailability
 * it ended with, else "its sandbox pods are deleted".
 */
function terminalSandboxCondition(basis: DecisionBasis, wasTerminal: boolean): ConditionDecision {
  const { obs, phase, states } = basis;
  if (!wasTerminal && states.some((s) => s.state === "fatal")) return sandboxCondition(states, basis.deadlineMs);
  const kept = obs.previous?.conditions?.find((c) => c.type === CONDITION.sandboxReady && c.reason === REASON.sandboxUnavailable);
  if (kept) return copyCondition(kept);
  return { type: CONDITION.sandboxReady, status: "False", reason: REASON.terminal, message: `the run is ${phase}: its sandbox pods are deleted` };
}

/** Completed and the agent's exit: kept as recorded once the Run was terminal, decided on the pass that ends it. */
function terminalCompletion(basis: DecisionBasis, sandboxReady: ConditionDecision, wasTerminal: boolean): { condition: ConditionDecision | undefined; agentExit?: ContainerExit | undefined } {
  const { obs, phase } = basis;
  if (wasTerminal) {
    const keptCompletion = obs.previous?.conditions?.find((c) => c.type === CONDITION.completed && c.status === "True");
    return { condition: keptCompletion ? copyCondition(keptCompletion) : undefined, agentExit: obs.previous?.agentExit };
  }
  return decideCompletion({
    cancelled: phase === "Cancelled", deadlineExceeded: isPastDeadline(obs, basis.startedAt), spec: obs.spec, engine: basis.engine,
    ...(sandboxReady.reason === REASON.sandboxUnavailable ? { sandboxFailure: sandboxReady.message } : {}),
  });
}

/** Pods still stopping (a sandbox pod, an engine pod being deleted): the finished engine pod does not count. */
function isDraining(obs: RunObservation): boolean {
  const enginePod = enginePodOf(obs);
  return [...obs.pods.entries()].some(([name, pod]) => !(name === enginePod && decideEnginePhase(pod) !== undefined));
}

function decideTerminal(basis: DecisionBasis): RunDecision {
  const { obs, phase } = basis;
  const wasTerminal = obs.previous?.phase !== undefined && TERMINAL_PHASES.includes(obs.previous.phase);
  const sandboxReady = terminalSandboxCondition(basis, wasTerminal);
  const completion = terminalCompletion(basis, sandboxReady, wasTerminal);
  const message = obs.previous?.message ?? completion.condition?.message;
  const finished = decideEnginePhase(basis.engine) !== undefined;
  const draining = isDraining(obs);
  return {
    phase,
    lifecycle: finished ? "finished" : "stopped",
    ...(draining ? { draining } : {}),
    ...(completion.agentExit ? { agentExit: completion.agentExit } : {}),
    sandboxes: [],
    hostExec: false,
    sandboxStatus: basis.sandboxStatus.map((s) => ({ ...s, ready: false })),
    conditions: [
      basis.resolved, sandboxReady, { type: CONDITION.awaitingApproval, status: "False", reason: REASON.terminal, message: `the run is ${phase}` },
      ...(obs.podSecurity ? [obs.podSecurity] : []),
      ...(completion.condition ? [completion.condition] : []),
    ],
    ...(message !== undefined ? { message } : {}),
    startedAt: basis.startedAt,
    completedAt: obs.previous?.completedAt ?? obs.nowIso,
  };
}
