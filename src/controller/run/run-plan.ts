// The second part of a Run pass (src/controller/README.md, "How a Run pass reads"): what the Run becomes and what
// to write for it, decided from one observation (run-gather.ts). Pure: no client, and no clock but the pass's
// (`nowMs`, `nowIso` in the observation). The answer is a plan for the applier (run-apply.ts): the Run deleted, a
// blocked Run (what it loses, its status), a running one (its pin, resumed snapshot, pool take-over, children, one
// status, a requeue), or a conditional write whose answer the plan needs first (the pin, a pool pod's claim).
import { CONDITION, REASON, TERMINAL_PHASES, type RunStatus } from "../../api/status.ts";
import type { PoolMissReason } from "../../api/pools.ts";
import type { RunSpec } from "../../api/run.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildRunChildren } from "../../sandbox/run-children.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { computeSandboxPlan, type SandboxPlan } from "../../sandbox/sandbox-plan.ts";
import { formatFieldPath, type ConditionDecision } from "../conditions.ts";
import { computeEffectivePolicy } from "../leviath-policy/policy-state.ts";
import { decideNetworkRefusal } from "./network-condition.ts";
import { decidePodSecurityCondition } from "./pod-security-condition.ts";
import { decidePodsWaiting, observePod } from "./pods-waiting.ts";
import { coldBinding, findBinding, listSparedChildren, planAdoption, planTakeOver, poolBinding, type PoolClaim, type TakeOver } from "./run-adoption.ts";
import type { Blocked } from "./run-blocked.ts";
import { computeTtlExpiryMs, type ObservedPod } from "./run-completion.ts";
import { checkCredentials } from "./run-credentials.ts";
import { decideRun, type RunDecision } from "./run-decision.ts";
import type { RunPassObservation, RunWorld } from "./run-gather.ts";
import { decidePin, type PinBasis } from "./run-pinning.ts";
import { resolveResume, type ResumeWrite } from "./run-resume.ts";
import { resolveRollout } from "./run-rollout.ts";
import { buildBlockedRunStatus, buildRunStatus, type EngineBinding, type StatusBasis } from "./run-status.ts";
import type { PodObject } from "../owned-children.ts";

/** A Run refused for unverified enforcement looks again this often (a probe result also requeues it). */
export const NETWORK_REFUSAL_RECHECK_MS = 60_000;
/** What a stopped run loses; its ConfigMap and workspace claim stay until the Run is deleted. */
const STOPPED_KINDS = new Set(["Pod", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"]);
/** What a finished Run's later passes delete again if anything brought it back: its pods stay as they ended. */
const FINISHED_KINDS = new Set([...STOPPED_KINDS].filter((k) => k !== "Pod"));

/** A Run that may not go on (or has nothing more to do): what it loses, in order, then its status. */
export interface BlockedPlan {
  readonly kind: "blocked";
  /** Children deleted one after the other. */
  readonly deletes: readonly KubeObject[];
  /** The approval controller's reader Role and binding, deleted together after them. */
  readonly dropReader: readonly KubeObject[];
  readonly status?: RunStatus | undefined;
  readonly requeueAfterMs?: number | undefined;
}

/** A Run with a snapshot to go on with: what to write for it, in the applier's order. */
export interface RunningPlan {
  readonly kind: "run";
  /** The start snapshot this pass creates (its answer gates every child but a pod's prerequisites). */
  readonly pin?: KubeObject | undefined;
  /** The resumed snapshot this pass creates, answering a resume request. */
  readonly resume?: ResumeWrite | undefined;
  /** The policy rollout's snapshots (run-rollout.ts), applied when they changed, before the status naming them. */
  readonly rollout?: readonly KubeObject[] | undefined;
  /** A warm pool's miss to count. */
  readonly missed?: { readonly agentKey: string; readonly reason: PoolMissReason } | undefined;
  /** What the Run takes over of its pool pod. */
  readonly takeOver?: TakeOver | undefined;
  readonly children: { readonly desired: KubeObject[]; readonly live: boolean; readonly spare: ReadonlySet<string> };
  /** Deleted together once the children are written (a finished Run's approval reader). */
  readonly dropReader: readonly KubeObject[];
  readonly status: RunStatus;
  readonly requeueAfterMs?: number | undefined;
  /** What the status was built from, for the status that says the child writes failed ({@link planChildrenFailure}). */
  readonly basis: { readonly snapshot: RunSnapshot; readonly decision: RunDecision; readonly engine: EngineBinding | undefined };
}

/** What the pass does: nothing, delete the Run, write a conditional write first and plan again with its answer, or a plan. */
export type RunPlan =
  | { readonly kind: "none" }
  | { readonly kind: "delete-run" }
  | { readonly kind: "pin-first"; readonly pin: KubeObject }
  | { readonly kind: "claim-first"; readonly claim: PoolClaim }
  | BlockedPlan
  | RunningPlan;

const basisOf = (obs: RunPassObservation): StatusBasis => ({ generation: obs.generation, previous: obs.run.status, nowIso: obs.nowIso });
const pinBasisOf = (obs: RunPassObservation, spec: RunSpec): PinBasis => ({ ref: obs.ref, spec, status: obs.run.status, policy: obs.policy, settings: obs.settings });

/** The plan of one pass over one Run, from its observation; pure. */
export function planRun(obs: RunPassObservation): RunPlan {
  if (!obs.spec.ok) return refuseInvalidSpec(obs, obs.spec.issue);
  const spec = obs.spec.value;
  const ttl = computeTtlExpiryMs(spec, obs.run.status);
  // ttlSecondsAfterFinished: the Run goes, and garbage collection takes every child with it.
  if (obs.isOver && ttl !== undefined && obs.nowMs >= ttl) return { kind: "delete-run" };
  const answer = obs.answers.pin;
  if (answer !== undefined && answer !== true) return stop(obs, answer.refused, answer.written);
  if (obs.pin === undefined) throw new Error(`Run ${obs.ref.namespace}/${obs.ref.name}: the pass gathered nothing to pin from`);
  const pin = decidePin(pinBasisOf(obs, spec), obs.pin, answer);
  if (pin.kind === "blocked" && pin.write) return { kind: "pin-first", pin: pin.write };
  if (pin.kind === "blocked" && obs.isOver) return stayFinished(obs, ttl);
  if (pin.kind === "blocked") return stop(obs, pin.blocked);
  // The gatherer reads the world of every pass whose pin resolves a snapshot; a plan never goes on without it.
  if (obs.world === undefined) throw new Error(`Run ${obs.ref.namespace}/${obs.ref.name}: the pass gathered nothing around its snapshot`);
  return planResolved(obs, spec, { snapshot: pin.snapshot, write: pin.write, world: obs.world });
}

/** An invalid spec fails the Run, naming the field; a finished Run never leaves its phase, so an edit of its spec changes nothing. */
function refuseInvalidSpec(obs: RunPassObservation, issue: { path: PropertyKey[]; message: string } | undefined): RunPlan {
  if (obs.isOver) return { kind: "none" };
  const message = `${issue ? formatFieldPath("spec", issue.path) : "spec"}: ${issue?.message ?? "invalid"}`;
  return { kind: "blocked", deletes: [], dropReader: [], status: buildBlockedRunStatus(basisOf(obs), { phase: "Failed", reason: REASON.invalidSpec, message }) };
}

/**
 * A Run that may not go on: its status says why. One that failed loses what may run or act for it, including
 * what this pass wrote and the cache may not hold yet (`written`), then the approval reader.
 */
function stop(obs: RunPassObservation, blocked: Blocked, written: readonly KubeObject[] = []): BlockedPlan {
  const status = buildBlockedRunStatus(basisOf(obs), { phase: blocked.phase, reason: blocked.reason, message: blocked.message, snapshotSha256: blocked.sha256 });
  const requeue = blocked.recheckMs !== undefined ? { requeueAfterMs: blocked.recheckMs } : {};
  // A run that can no longer be resolved is over: nothing of it may keep running.
  if (blocked.phase !== "Failed") return { kind: "blocked", deletes: [], dropReader: [], status, ...requeue };
  return { kind: "blocked", deletes: listStopped(obs, STOPPED_KINDS, written), dropReader: obs.approvalReader, status, ...requeue };
}

/** The Run's cached children of `kinds` not being deleted yet, and what this pass wrote that the cache may not hold yet. */
function listStopped(obs: RunPassObservation, kinds: ReadonlySet<string>, written: readonly KubeObject[] = []): KubeObject[] {
  const owned = obs.owned.filter((o) => kinds.has(o.kind) && !o.metadata.deletionTimestamp);
  const uncached = written.filter((w) => !owned.some((o) => o.kind === w.kind && o.metadata.name === w.metadata.name));
  return [...owned, ...uncached];
}

/**
 * A finished Run whose pinned snapshot can no longer be read (its ConfigMap deleted or replaced after it ended)
 * keeps its phase, reason and message: a terminal phase is never left. Nothing of it may run, so what a
 * finished Run loses is deleted again if anything brought it back; its TTL still applies.
 */
function stayFinished(obs: RunPassObservation, ttl: number | undefined): BlockedPlan {
  return { kind: "blocked", deletes: listStopped(obs, FINISHED_KINDS), dropReader: obs.approvalReader, ...(ttl === undefined ? {} : { requeueAfterMs: Math.max(1, ttl - obs.nowMs) }) };
}

/** What a pass with a snapshot goes on with: the snapshot, its write when this pass makes it, and what was read around it. */
interface Resolved {
  readonly snapshot: RunSnapshot;
  readonly write: KubeObject | undefined;
  readonly world: RunWorld;
}

/** The part of a pass once the run has its snapshot: network refusal, resume, engine, decision, children, status. */
function planResolved(obs: RunPassObservation, spec: RunSpec, resolved: Resolved): RunPlan {
  const { ref } = obs;
  const { snapshot, write, world } = resolved;
  const planned = computeSandboxPlan(ref.name, snapshot.runPolicy);
  const pods = new Map<string, ObservedPod>();
  for (const o of world.owned) if (o.kind === "Pod") pods.set(o.metadata.name, observePod(o as PodObject));
  const refusal = networkRefusal(obs, planned, pods.size > 0, world);
  // Under `onUnverified: refuse`, a Run not started yet waits (Pending), unless its snapshot is refused meanwhile.
  if (refusal !== undefined && write !== undefined) return { kind: "pin-first", pin: write };
  if (refusal !== undefined) {
    const status = buildBlockedRunStatus(basisOf(obs), { phase: "Pending", reason: REASON.networkNotVerified, message: refusal, snapshotSha256: snapshot.sha256 });
    return { kind: "blocked", deletes: [], dropReader: [], status, requeueAfterMs: NETWORK_REFUSAL_RECHECK_MS };
  }
  const resumed = resolveResume({ ref, annotations: obs.run.metadata.annotations, status: obs.run.status, snapshot, nowIso: obs.nowIso, policy: obs.policy, inForce: world.resumedSnapshot, conflict: obs.answers.resumeConflict });
  const credentials = decideCredentials(obs, snapshot, world);
  const bound = bindEngine(obs, { snapshot, world, pin: write, held: credentials?.status === "False" });
  if ("first" in bound) return bound.first;
  const { engine } = bound;
  const decision = decideRun({
    name: ref.name, spec, previous: obs.run.status, snapshot, plan: planSandboxes(planned, engine, snapshot), pods, enginePod: engine?.pod,
    podSecurity: decidePodSecurityCondition(ref.namespace, world.namespaceLabels),
    hasRuntimeClass: (rc) => world.runtimeClasses.has(rc),
    credentials, podsWaiting: decidePodsWaiting(pods, world.owned), nowMs: obs.nowMs, nowIso: obs.nowIso,
    networkPolicyMissing: world.networkPolicyFound === false, networkEnforcement: world.networkEnforcement,
  });
  return buildRunningPlan(obs, spec, { snapshot, write, resumed, bound: { ...bound, engine }, decision });
}

/** The writes for a Run the pass decided: its children as decided, one status, and when to look again. */
function buildRunningPlan(obs: RunPassObservation, spec: RunSpec, at: { snapshot: RunSnapshot; write: KubeObject | undefined; resumed: ReturnType<typeof resolveResume>; bound: Extract<Bound, { engine: unknown }>; decision: RunDecision }): RunningPlan {
  const { ref } = obs;
  const { snapshot, write, resumed, bound, decision } = at;
  const { engine } = bound;
  const finished = TERMINAL_PHASES.includes(decision.phase);
  const rollout = resolveRollout({ ref, run: spec, snapshot, policy: obs.policy, active: decision.lifecycle === "active" && !finished });
  const status = buildRunStatus(basisOf(obs), { name: ref.name, snapshot, decision, resumed, engine, rollout: rollout.status });
  const expiry = finished ? computeTtlExpiryMs(spec, status) : undefined;
  const after = [decision.requeueAfterMs, expiry === undefined ? undefined : Math.max(1, expiry - obs.nowMs)].filter((n): n is number => n !== undefined);
  return {
    kind: "run",
    ...(write ? { pin: write } : {}),
    ...(resumed.write ? { resume: resumed.write } : {}),
    ...(rollout.configMaps.length > 0 ? { rollout: rollout.configMaps } : {}),
    ...(bound.missed ? { missed: bound.missed } : {}),
    ...(bound.takeOver ? { takeOver: bound.takeOver } : {}),
    children: {
      desired: buildRunChildren({
        run: ref, snapshot, settings: obs.settings, sandboxes: decision.sandboxes, hostExec: decision.hostExec, lifecycle: decision.lifecycle,
        ...(decision.draining ? { draining: true } : {}), ...(decision.holdEngine ? { holdEngine: true } : {}),
        ...(engine?.from === "pool" ? { pool: engine.pod, pairedSandboxes: engine.paired === true } : {}),
      }).concat(rollout.configMaps),
      live: decision.lifecycle === "active",
      spare: listSparedChildren(engine, decision.lifecycle, decision.draining === true),
    },
    // A finished Run's sidecar reads no Approval: the approval controller's reader Role and its binding (owned by
    // the Run without being its controller, so the prune of its own children leaves them) go with the sidecar's Role.
    dropReader: finished ? obs.approvalReader : [],
    status,
    ...(after.length ? { requeueAfterMs: Math.min(...after) } : {}),
    basis: { snapshot, decision, engine },
  };
}

/** Why a Run may not start yet under `onUnverified: refuse` (undefined: it may). */
function networkRefusal(obs: RunPassObservation, plan: readonly SandboxPlan[], hasPods: boolean, world: RunWorld): string | undefined {
  const started = hasPods || TERMINAL_PHASES.includes(obs.run.status?.phase ?? "Pending");
  return decideNetworkRefusal({ plan, started, enforcement: world.networkEnforcement, spec: computeEffectivePolicy(obs.policy)?.spec.networkEnforcement });
}

/** CredentialsReady: none once the Run is over; from the Secrets when they were looked up this pass, else as kept. */
function decideCredentials(obs: RunPassObservation, snapshot: RunSnapshot, world: RunWorld): ConditionDecision | undefined {
  if (obs.isOver) return undefined;
  const credentials = snapshot.controller.credentials;
  if (world.credentialSecrets !== undefined || credentials.length === 0) return checkCredentials(world.credentialSecrets ?? [], obs.ref.namespace, credentials);
  const kept = obs.run.status?.conditions?.find((c) => c.type === CONDITION.credentialsReady);
  return kept && { type: kept.type, status: kept.status, reason: kept.reason, message: kept.message };
}

/** The engine binding of the pass, or the conditional write to make first; with a pool miss to count and a take-over. */
type Bound =
  | { readonly first: RunPlan }
  | { readonly engine: EngineBinding | undefined; readonly missed?: { agentKey: string; reason: PoolMissReason } | undefined; readonly takeOver?: TakeOver | undefined };

/**
 * The engine pod the Run has: with warm pools off, its own (undefined); on, adopted from a pool or cold, decided
 * once. A Run whose credential Secret is missing (`held`) adopts nothing yet, as a cold one creates no engine pod;
 * a pool pod is claimed only for a snapshot the server holds (`pin`, written this pass: its answer first).
 */
function bindEngine(obs: RunPassObservation, at: { snapshot: RunSnapshot; world: RunWorld; pin: KubeObject | undefined; held: boolean }): Bound {
  if (!obs.warmPools) return { engine: undefined };
  const { ref, owned } = obs;
  const { snapshot, world } = at;
  const withTakeOver = (engine: EngineBinding): Bound => ({ engine, ...(obs.isOver ? {} : { takeOver: planTakeOver(ref, engine.pod, owned, world.poolSandboxPods) }) });
  const found = findBinding({ ref, previous: obs.run.status, isOver: obs.isOver, snapshot, owned });
  if (found?.from === "pool") return withTakeOver(found);
  if (found !== undefined) return { engine: found };
  if (at.held) return { engine: coldBinding(ref, snapshot, undefined) };
  const claimed = obs.answers.claim;
  // Every pod adopted now carries the pool-pair label: one made before it has another pool hash and never matches.
  if (claimed !== undefined && "pod" in claimed) return withTakeOver(poolBinding(claimed.pod, true));
  if (at.pin !== undefined) return { first: { kind: "pin-first", pin: at.pin } };
  const adoption = planAdoption({ ref, snapshot, policy: obs.policy, settings: obs.settings, facts: world.adoption ?? { agentUid: undefined, pods: [] }, lost: claimed && "lost" in claimed ? new Set(claimed.lost) : undefined });
  if ("claim" in adoption) return { first: { kind: "claim-first", claim: adoption.claim } };
  return { engine: adoption.engine, missed: adoption.missed };
}

/** The Run's sandboxes: named after the Run, or, served from a warm pool, after its pool pod (whose own sandbox pods it adopted). */
function planSandboxes(planned: SandboxPlan[], engine: EngineBinding | undefined, snapshot: RunSnapshot): SandboxPlan[] {
  return engine?.from === "pool" && engine.paired === true ? computeSandboxPlan(engine.pod, snapshot.runPolicy) : planned;
}

/**
 * The status that says why the Run is stuck when its child writes failed (a Pod Security refusal, a quota), before
 * the loop retries with backoff, and the Event's note. The server's text stays the message; the condition's reason
 * (`reason`, from decideErrorReason) says what kind of refusal it was.
 */
export function planChildrenFailure(obs: RunPassObservation, plan: RunningPlan, failure: { reason: string; text: string }): { status: RunStatus; note: string } {
  const { snapshot, decision, engine } = plan.basis;
  const message = `writing the Run's children failed: ${failure.text}`;
  const refused = { type: CONDITION.childrenFailure, status: "True" as const, reason: failure.reason, message };
  const failed = { ...decision, message, conditions: [...decision.conditions, refused] };
  return { status: buildRunStatus(basisOf(obs), { name: obs.ref.name, snapshot, decision: failed, engine }), note: message };
}
