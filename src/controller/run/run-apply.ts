// The third part of a Run pass (src/controller/README.md, "How a Run pass reads"): the plan's writes, in one fixed
// order, with one status write at the end. A conditional write whose answer the plan depends on (the start snapshot
// refused, a pool pod claimed or lost, a resumed snapshot's name held by something else) is not an exception: it
// comes back as what the applier learned, and the pass plans again with it (run-reconciler.ts).
import { API_VERSION, KIND } from "../../api/constants.ts";
import { REASON, type RunStatus } from "../../api/status.ts";
import { isApiStatus } from "../../kube/errors.ts";
import type { ObjectReference } from "../../kube/event-recorder.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { RunRef } from "../../sandbox/names.ts";
import { settleAll } from "../applied.ts";
import type { ReconcileResult } from "../cluster-port.ts";
import { isSameStatus } from "../conditions.ts";
import { decideErrorReason } from "../error-reasons.ts";
import { buildObjectKey } from "../object-key.ts";
import type { createTransitionRecorder } from "../status-events.ts";
import { announceBinding, claimPoolPod, takeOverPoolObjects, type PoolClaim } from "./run-adoption.ts";
import type { Blocked } from "./run-blocked.ts";
import { POD_PREREQUISITES, type createChildWriter } from "./run-children-sync.ts";
import type { RunAnswers, RunPassObservation, RunReconcilerDeps, WrittenStatuses } from "./run-gather.ts";
import { answerPinWrite } from "./run-pinning.ts";
import { planChildrenFailure, type BlockedPlan, type RunningPlan, type RunPlan } from "./run-plan.ts";
import { isResumedSnapshot } from "./run-resume.ts";
import { pickControllerFields } from "./run-status.ts";
import type { OwnClaimRecord } from "./own-claim.ts";
import { isInPlace } from "../owned-children.ts";

/** What the applier writes with. */
export interface ApplyContext {
  readonly deps: RunReconcilerDeps;
  readonly written: WrittenStatuses;
  readonly recordTransitions: ReturnType<typeof createTransitionRecorder>;
  readonly syncChildren: ReturnType<typeof createChildWriter>["syncChildren"];
}

/** What applying a plan came to: the pass's result, or an answer the pass plans again with. */
export type Applied = { readonly result: ReconcileResult } | { readonly learned: RunAnswers };

/** The `action` of the Events of a Run's status transitions. */
const RUN_ACTION = "Reconcile";

const referenceOf = (ref: RunRef): ObjectReference => ({ apiVersion: API_VERSION, kind: KIND.run, name: ref.name, namespace: ref.namespace, uid: ref.uid });

/**
 * Applies one plan. The order is fixed (src/controller/README.md): the Run's deletion; the start snapshot; the
 * resumed snapshot; a pool pod's claim and take-over; the children (a pod's prerequisites beside the start
 * snapshot, the rest once it is accepted), then their prune; what a stopped or finished Run loses; one status write;
 * last, an adopted pool pod's binding annotations.
 */
export async function applyRunPlan(ctx: ApplyContext, obs: RunPassObservation, plan: RunPlan): Promise<Applied> {
  switch (plan.kind) {
    case "none":
      return { result: {} };
    case "delete-run":
      await ctx.deps.writer.delete(obs.run);
      return { result: {} };
    case "pin-first": {
      const answer = await writePin(ctx, obs, plan.pin);
      return { learned: { pin: answer === true ? true : { refused: answer, written: [] } } };
    }
    case "claim-first":
      return { learned: { claim: await claim(ctx, obs, plan.claim) } };
    case "blocked":
      return { result: await applyBlocked(ctx, obs, plan) };
    case "run":
      return applyRunning(ctx, obs, plan);
    default:
      return plan satisfies never;
  }
}

/** Creates the start snapshot; its answer: true when what holds the name is this snapshot, or why not (rejects when the write failed). */
function writePin(ctx: ApplyContext, obs: RunPassObservation, desired: KubeObject): Promise<true | Blocked> {
  const answer = ctx.deps.writer.createOrGet(desired).then((written) => answerPinWrite({ ref: obs.ref, status: obs.run.status }, desired, written));
  // Awaited later in the pass (at the latest when the pass ends); a failure must not count as unhandled meanwhile.
  answer.catch(() => undefined);
  return answer;
}

/** Claims the first pool pod of the plan's candidates it can (each read and written back at the version read). */
async function claim(ctx: ApplyContext, obs: RunPassObservation, plan: PoolClaim): Promise<NonNullable<RunAnswers["claim"]>> {
  for (const pod of plan.candidates) {
    if (await claimPoolPod(ctx.deps.writer, obs.ref, plan.agentUid, pod)) {
      ctx.deps.pools?.adopted(plan.agentKey);
      return { pod };
    }
  }
  return { lost: plan.candidates };
}

/** A blocked Run: its children deleted one after the other, then its approval reader, then its status. */
async function applyBlocked(ctx: ApplyContext, obs: RunPassObservation, plan: BlockedPlan): Promise<ReconcileResult> {
  for (const obj of plan.deletes) await ctx.deps.writer.delete(obj);
  await settleAll(plan.dropReader.map((o) => ctx.deps.writer.delete(o)));
  if (plan.status) await writeStatus(ctx, obs, plan.status);
  return plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : {};
}

/** A running Run's writes, in order; the start snapshot's write is never left in flight when the pass ends. */
async function applyRunning(ctx: ApplyContext, obs: RunPassObservation, plan: RunningPlan): Promise<Applied> {
  const pin = plan.pin === undefined ? undefined : writePin(ctx, obs, plan.pin);
  try {
    if (plan.resume) {
      const existing = await ctx.deps.writer.createOrGet(plan.resume.configMap);
      if (!isResumedSnapshot(plan.resume, existing)) return { learned: { resumeConflict: true } };
    }
    if (plan.missed) ctx.deps.pools?.missed(plan.missed.agentKey, plan.missed.reason);
    if (plan.takeOver) await takeOverPoolObjects(ctx.deps.writer, obs.ref, plan.takeOver);
    const claim: OwnClaimRecord = { recorded: obs.run.status?.workspaceClaimUid };
    const children = await writeChildren(ctx, obs, plan, { pin, claim });
    if ("learned" in children) return children;
    // The rollout snapshots before the status that names them (the sidecar reads a snapshot only once named).
    await settleAll((plan.rollout ?? []).filter((cm) => !isInPlace(cm, ctx.deps.cache.get("configMap", obs.ref.namespace, cm.metadata.name))).map((cm) => ctx.deps.writer.apply(cm)));
    await settleAll(plan.dropReader.map((o) => ctx.deps.writer.delete(o)));
    await writeStatus(ctx, obs, withClaimUid(plan.status, claim));
    // Last: the pool pod's sidecar checks its binding as soon as it sees this, and finds the Role and status written.
    if (plan.takeOver?.announce) await announceBinding(ctx.deps.writer, obs.ref, plan.takeOver.pod);
    const after = [children.requeueAfterMs, plan.requeueAfterMs].filter((n): n is number => n !== undefined);
    return { result: after.length ? { requeueAfterMs: Math.min(...after) } : {} };
  } finally {
    await pin?.catch(() => undefined);
  }
}

/**
 * Writes the Run's children as planned: the requeue delay they ask for, or, when the start snapshot turned out not
 * to be the Run's, its answer (with the prerequisites written beside it). Any other failure is said on the Run and
 * thrown (the loop retries).
 */
async function writeChildren(ctx: ApplyContext, obs: RunPassObservation, plan: RunningPlan, seen: { pin: Promise<true | Blocked> | undefined; claim: OwnClaimRecord }): Promise<{ requeueAfterMs: number | undefined } | { learned: RunAnswers }> {
  const { desired, live, spare } = plan.children;
  const { pin, claim } = seen;
  try {
    const out = await ctx.syncChildren(obs.ref, desired, { live, spare, claim, ...(pin ? { pinned: pin.then((a) => a === true) } : {}) });
    if (!out.refused) return { requeueAfterMs: out.requeueAfterMs };
    const refused = (await pin) as Blocked;
    return { learned: { pin: { refused, written: desired.filter((o) => POD_PREREQUISITES.has(o.kind)) } } };
  } catch (err) {
    // The snapshot's own write failed: nothing is pinned, so no status may say it is; the loop retries.
    if (pin !== undefined && await pin.then(() => false, () => true)) throw err;
    const failure = planChildrenFailure(obs, plan, { reason: decideErrorReason(err), text: (err as Error).message });
    ctx.deps.events?.record(referenceOf(obs.ref), { type: "Warning", reason: REASON.failedCreate, action: "Create", note: failure.note });
    await writeStatus(ctx, obs, withClaimUid(failure.status, claim)).catch(() => undefined);
    throw err;
  }
}

/**
 * The status with the uid of the workspace claim this pass created (own-claim.ts) recorded: known only once the
 * claim's create is answered, so the applier adds it to the planned status; a uid on record is kept as planned.
 */
function withClaimUid(status: RunStatus, claim: OwnClaimRecord): RunStatus {
  return claim.accepted === undefined || status.workspaceClaimUid === claim.accepted ? status : { ...status, workspaceClaimUid: claim.accepted };
}

/** The one status write of a pass: skipped when nothing of the controller's part changed; a transition recorded as an Event. */
async function writeStatus(ctx: ApplyContext, obs: RunPassObservation, status: RunStatus): Promise<void> {
  const { run, ref } = obs;
  if (isSameStatus(pickControllerFields(run.status), status)) return;
  try {
    await ctx.deps.writer.applyStatus("run", ref.namespace, ref.name, status);
    ctx.written.set(buildObjectKey(ref.namespace, ref.name), { fromRv: run.metadata.resourceVersion, status });
  } catch (err) {
    // Deleted while this pass ran (a TTL, a person): there is nothing left to report on.
    if (!isApiStatus(err, 404)) throw err;
    return;
  }
  ctx.recordTransitions(referenceOf(ref), run.status?.conditions, status.conditions, RUN_ACTION);
}
