// A Run served from a warm pool (docs/controller.md, "Binding a Run"), with warm pools on only. Once its snapshot is
// pinned, a Run whose Agent has a pool takes the oldest ready pool pod made from what it pins: the pod is claimed by
// a write at the resourceVersion just read (of two Runs racing for it one wins, the other takes the next or
// misses), and its claim and identity follow it to the Run. A miss starts cold. Either way the answer is recorded
// (status.startedFrom) and never decided again; the pod itself says it was adopted should that status be lost.
// The decisions here are pure (`findBinding`, `planAdoption`, `planTakeOver`); the claim and the take-over are
// conditional writes the applier makes (`claimPoolPod`, `takeOverPoolObjects`): each reads the object it replaces
// and writes it back at the version read, so of two writers one wins.
import { buildAgentKey } from "../../api/common.ts";
import { KIND, LABEL } from "../../api/constants.ts";
import type { PoolMissReason } from "../../api/pools.ts";
import type { RunStatus } from "../../api/status.ts";
import { isApiStatus } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ResourceName } from "../../kube/resources.ts";
import { ANNOTATION, buildChildNames, type RunRef } from "../../sandbox/names.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import { buildAdoptedObject, buildAnnouncedPod, buildPoolTemplate, computePoolHash, isAnnounced, listAdoptedObjects, listPoolObjectNames, POOL_STATE } from "../../sandbox/pool-pods.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { hasHostStages } from "../../sandbox/sandbox-plan.ts";
import type { ClusterWriter } from "../cluster-port.ts";
import { computeEffectivePolicy, type PolicyState } from "../leviath-policy/policy-state.ts";
import { decideAdoption, type AdoptionInput } from "../pool/pool-decision.ts";
import { isOwnedBy } from "../owned-children.ts";
import { isPoolEnginePod, type ObservedPoolPod } from "../warm/pool-pod-lookup.ts";
import type { EngineBinding } from "./run-status.ts";

/** What adoption saw this pass (warm pools on, no engine binding decided yet): the Agent's uid and its pool's pods. */
export interface AdoptionFacts {
  readonly agentUid: string | undefined;
  readonly pods: readonly ObservedPoolPod[];
}

/** The Run as adoption sees it this pass. */
export interface AdoptionInputs {
  readonly ref: RunRef;
  readonly previous: RunStatus | undefined;
  readonly isOver: boolean;
  readonly snapshot: RunSnapshot;
  /** The cached children the Run controls. */
  readonly owned: readonly KubeObject[];
}

/** A claim to try: the pool's ready pods in the order a Run adopts them, each claimed at the version read. */
export interface PoolClaim {
  readonly agentKey: string;
  readonly agentUid: string;
  readonly candidates: readonly string[];
}

/** A cold Run's engine pod and claim. */
export function coldBinding(ref: RunRef, snapshot: RunSnapshot, from: EngineBinding["from"]): EngineBinding {
  const names = buildChildNames(ref.name);
  return { pod: names.enginePod, from, workspace: snapshot.controller.workspace.claimName ?? names.workspace };
}

/** A Run's binding to the pool pod it adopted (`paired`: the pod carries `pool-pair`, see EngineBinding). */
export function poolBinding(pod: string, paired: boolean): EngineBinding {
  return { pod, from: "pool", workspace: listPoolObjectNames(pod)[1]!, paired };
}

/**
 * Whether the Run's pool pod `pod` carries the `pool-pair` label its sandbox pods are scheduled by: false only for a
 * pod the cache shows the Run's without it (adopted before pool pods carried it); a pod the cache does not show the
 * Run's yet (its claim not seen yet) was adopted now, and every pod adopted now carries it.
 */
function isPaired(owned: readonly KubeObject[], pod: string): boolean {
  const found = owned.find((o) => o.kind === "Pod" && o.metadata.name === pod);
  return found === undefined || found.metadata.labels?.[LABEL.poolPair] !== undefined;
}

/** The binding decided on an earlier pass (its status, or the adopted pod itself), or undefined when none was. */
export function findBinding(input: AdoptionInputs): EngineBinding | undefined {
  const { ref, previous, owned, snapshot } = input;
  if (previous?.startedFrom === "pool" && previous.enginePod !== undefined) return poolBinding(previous.enginePod, isPaired(owned, previous.enginePod));
  // A Run recorded cold stays cold: a pool pod it came to own is no engine pod of it (and is pruned).
  if (previous?.startedFrom === "cold") return coldBinding(ref, snapshot, "cold");
  const adopted = owned.find(isPoolEnginePod);
  if (adopted !== undefined) return poolBinding(adopted.metadata.name, isPaired(owned, adopted.metadata.name));
  // Cold: its engine pod exists already (it started before warm pools were on), or it is over without one.
  const started = owned.some((o) => o.kind === "Pod" && o.metadata.name === buildChildNames(ref.name).enginePod);
  return started || input.isOver ? coldBinding(ref, snapshot, "cold") : undefined;
}

/** What adoption decides for a Run with no binding yet: cold (and the miss to count, if any), or a claim to try. */
export type AdoptionPlan =
  | { readonly engine: EngineBinding; readonly missed?: { readonly agentKey: string; readonly reason: PoolMissReason } | undefined }
  | { readonly claim: PoolClaim };

/**
 * Whether the Run adopts a ready pool pod, pure: the oldest ready one made from what it pins, not `lost` to another
 * Run already; a Run that cannot (no pool, not eligible, no such pod, every one lost) starts cold, a miss counted.
 */
export function planAdoption(input: { ref: RunRef; snapshot: RunSnapshot; policy: PolicyState; settings: PodSettings; facts: AdoptionFacts; lost?: ReadonlySet<string> | undefined }): AdoptionPlan {
  const { ref, snapshot, facts } = input;
  const agent = snapshot.controller.agent.name;
  const agentKey = buildAgentKey(ref.namespace, agent);
  const uid = facts.agentUid;
  const pool = computeEffectivePolicy(input.policy)?.spec.pools.find((p) => p.agent === agentKey);
  const cold = coldBinding(ref, snapshot, "cold");
  if (uid === undefined || pool === undefined) return { engine: cold };
  const base: AdoptionInput = {
    pool,
    runHash: computePoolHash(buildPoolTemplate({ namespace: ref.namespace, name: agent, uid }, snapshot, pool), input.settings),
    workspace: snapshot.controller.workspace,
    hostExec: hasHostStages(snapshot.runPolicy),
    mcpSecrets: snapshot.controller.mcpSecrets.some((s) => s.mounted),
    pods: facts.pods,
  };
  const lost = new Set(input.lost ?? []);
  const candidates: string[] = [];
  for (;;) {
    const decision = decideAdoption({ ...base, lost });
    if (decision.kind === "adopt") {
      candidates.push(decision.pod);
      lost.add(decision.pod);
      continue;
    }
    if (candidates.length > 0) return { claim: { agentKey, agentUid: uid, candidates } };
    if (decision.kind === "no-pool") return { engine: cold };
    return { engine: cold, missed: { agentKey, reason: decision.reason } };
  }
}

/**
 * Claims pool pod `name` for the Run: read now, still ready, unbound and its Agent's, and written back at that
 * resourceVersion. False when another Run (or the pool's retirement) got there first.
 */
export async function claimPoolPod(writer: ClusterWriter, ref: RunRef, agentUid: string, name: string): Promise<boolean> {
  const live = await writer.read("pod", ref.namespace, name);
  if (live === undefined || live.metadata.deletionTimestamp || live.metadata.labels?.[LABEL.poolState] !== POOL_STATE.ready || !isOwnedBy(live, agentUid)) return false;
  try {
    await writer.replace(buildAdoptedObject(live, ref), live.metadata.resourceVersion);
    return true;
  } catch (err) {
    if (isApiStatus(err, 409) || isApiStatus(err, 404)) return false;
    throw err;
  }
}

const RESOURCE_OF: Readonly<Record<string, ResourceName>> = { PersistentVolumeClaim: "pvc", ServiceAccount: "serviceAccount", Role: "role", RoleBinding: "roleBinding" };

/** What of an adopted pool pod the Run takes over this pass: its claim and identity, and the pool's sandbox pods made for it. */
export interface TakeOver {
  readonly pod: string;
  /**
   * Whether the pod is to be annotated with the Run (its sidecar's signal: {@link announceBinding}) once the pass's
   * children and status are written: false when the cache shows it annotated already.
   */
  readonly announce: boolean;
  /** `Kind/name` of the claim and identity objects the cache does not show the Run's yet. */
  readonly objects: readonly string[];
  /** The pool's sandbox pods paired with `pod` that the cache does not show the Run's yet. */
  readonly sandboxPods: readonly string[];
}

/**
 * What the Run takes over of its pool pod `pod`, pure: the claim and identity the cache does not show it owning yet
 * (a later pass finishes an interrupted one), and the pool's cached sandbox pods paired with `pod`.
 */
export function planTakeOver(ref: RunRef, pod: string, owned: readonly KubeObject[], poolSandboxPods: readonly KubeObject[]): TakeOver {
  const { claim, identity } = listAdoptedObjects(pod);
  const isOwned = (id: string) => owned.some((o) => `${o.kind}/${o.metadata.name}` === id);
  const cached = owned.find((o) => o.kind === "Pod" && o.metadata.name === pod);
  return {
    pod,
    announce: cached === undefined || !isAnnounced(cached, ref),
    objects: [claim, ...identity].filter((id) => !isOwned(id)),
    sandboxPods: poolSandboxPods.filter((p) => p.metadata.annotations?.[ANNOTATION.poolPair] === pod && !isOwnedBy(p, ref.uid)).map((p) => p.metadata.name),
  };
}

/**
 * The adopted pod's claim and identity become the Run's (labelled and owned by it), each read and written back at
 * the version read. So do the pool's sandbox pods made for that pod ({@link claimPoolSandboxPods}).
 */
export async function takeOverPoolObjects(writer: ClusterWriter, ref: RunRef, take: TakeOver): Promise<void> {
  await Promise.all([claimPoolSandboxPods(writer, ref, take), ...take.objects.map(async (id) => {
    const [kind = "", name = ""] = id.split("/");
    const resource = RESOURCE_OF[kind]!;
    const live = await writer.read(resource, ref.namespace, name);
    if (live === undefined || isOwnedBy(live, ref.uid)) return;
    await writer.replace(buildAdoptedObject(live, ref), live.metadata.resourceVersion);
  })]);
}

/**
 * The sandbox pods the pool made for pool pod `pod` (docs/controller.md, "Warm sandbox pods"), each claimed as the
 * pod was: read now, still unbound, the Agent's and paired with `pod`, and written back labelled, annotated and
 * owned by the Run at the version read. One the pool retired first (or that is gone) is not taken; the Run's child
 * writes then make it cold under the same name. One the Run does not plan is pruned with its other children.
 */
async function claimPoolSandboxPods(writer: ClusterWriter, ref: RunRef, take: TakeOver): Promise<void> {
  await Promise.all(take.sandboxPods.map(async (name) => {
    const live = await writer.read("pod", ref.namespace, name);
    const agentOwned = live?.metadata.ownerReferences?.some((r) => r.controller && r.kind === KIND.agent) ?? false;
    if (live === undefined || live.metadata.deletionTimestamp || !agentOwned || live.metadata.labels?.[LABEL.poolState] !== POOL_STATE.ready || live.metadata.annotations?.[ANNOTATION.poolPair] !== take.pod) return;
    try {
      await writer.replace(buildAdoptedObject(live, ref), live.metadata.resourceVersion);
    } catch (err) {
      if (!isApiStatus(err, 409) && !isApiStatus(err, 404)) throw err;
    }
  }));
}

/** How many times the announcement is written again when the pod changed between its read and its write. */
const ANNOUNCE_ATTEMPTS = 3;

/**
 * Annotates the Run's adopted pool pod with the Run's name and uid (docs/controller.md, "Binding a Run"), after the
 * pass wrote the Run's Role bound to the pod's ServiceAccount and the status naming the pod: the sidecar's watch of
 * its own pod sees the annotations last, so its first check of the binding finds everything it reads (before, it
 * re-checked until the Role and the status followed). Read and written back at the version read; a version gone
 * stale (the kubelet writes the pod's status) is read again. A pod gone, or no longer the Run's, is left alone.
 */
export async function announceBinding(writer: ClusterWriter, ref: RunRef, pod: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const live = await writer.read("pod", ref.namespace, pod);
    if (live === undefined || live.metadata.deletionTimestamp || !isOwnedBy(live, ref.uid) || isAnnounced(live, ref)) return;
    try {
      await writer.replace(buildAnnouncedPod(live, ref), live.metadata.resourceVersion);
      return;
    } catch (err) {
      if (isApiStatus(err, 404)) return;
      if (!isApiStatus(err, 409) || attempt >= ANNOUNCE_ATTEMPTS) throw err;
    }
  }
}

/** What the Run's child writes must not prune: the adopted pod while it may stay, its claim, and its identity while the sidecar runs. */
export function listSparedChildren(binding: EngineBinding | undefined, lifecycle: "active" | "finished" | "stopped", draining: boolean): ReadonlySet<string> {
  if (binding?.from !== "pool") return new Set();
  const names = listAdoptedObjects(binding.pod);
  return new Set([
    names.claim,
    ...(lifecycle !== "stopped" ? [names.pod] : []),
    ...(lifecycle === "active" || draining ? names.identity : []),
  ]);
}
