// A Run served from a warm pool (docs/controller.md, "Binding a Run"), with warm pools on only. Once its snapshot is
// pinned, a Run whose Agent has a pool takes the oldest ready pool pod made from what it pins: the pod is claimed by
// a write at the resourceVersion just read (of two Runs racing for it one wins, the other takes the next or
// misses), and its claim and identity follow it to the Run. A miss starts cold. Either way the answer is recorded
// (status.startedFrom) and never decided again; the pod itself says it was adopted should that status be lost.
import { buildAgentKey } from "../../api/common.ts";
import { KIND, LABEL } from "../../api/constants.ts";
import type { RunStatus } from "../../api/status.ts";
import { isApiStatus } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ResourceName } from "../../kube/resources.ts";
import { ANNOTATION, buildChildNames, type RunRef } from "../../sandbox/names.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import { buildAdoptedObject, buildPoolTemplate, computePoolHash, listAdoptedObjects, listPoolObjectNames, POOL_STATE } from "../../sandbox/pool-pods.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { hasHostStages } from "../../sandbox/sandbox-plan.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { computeEffectivePolicy, type PolicyState } from "../policy/policy-state.ts";
import { decideAdoption, type AdoptionInput } from "../pool/pool-decision.ts";
import type { PoolLedger } from "../pool/pool-ledger.ts";
import { isOwnedBy } from "../owned-children.ts";
import { isPoolEnginePod, isPoolSandboxPod, listPoolPods } from "../warm/pool-pod-lookup.ts";
import type { EngineBinding } from "./run-status.ts";

/** What adoption needs; `pools` is present only with warm pools on. */
export interface AdoptionDeps {
  readonly cache: ClusterCache;
  readonly writer: ClusterWriter;
  readonly policy: () => PolicyState;
  readonly settings: PodSettings;
  readonly pools?: PoolLedger | undefined;
}

/** The Run as adoption sees it this pass. */
export interface AdoptionInputs {
  readonly ref: RunRef;
  readonly previous: RunStatus | undefined;
  readonly isOver: boolean;
  readonly snapshot: RunSnapshot & { accepted?: Promise<unknown> };
  /** The cached children the Run controls. */
  readonly owned: readonly KubeObject[];
  /** The engine pod may not start yet (a credential Secret is missing): nothing is decided. */
  readonly held: boolean;
}

/** A cold Run's engine pod and claim. */
function coldBinding(ref: RunRef, snapshot: RunSnapshot, from: EngineBinding["from"]): EngineBinding {
  const names = buildChildNames(ref.name);
  return { pod: names.enginePod, from, workspace: snapshot.controller.workspace.claimName ?? names.workspace };
}

/** A Run's binding to the pool pod it adopted (`paired`: the pod carries `pool-pair`, see EngineBinding). */
function poolBinding(pod: string, paired: boolean): EngineBinding {
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
function findBinding(input: AdoptionInputs): EngineBinding | undefined {
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

/**
 * The Run's engine binding: undefined with warm pools off (nothing changes for a cold Run); decided once, on the
 * first pass that may start the engine pod, and found again on every later pass.
 */
export async function bindEngine(deps: AdoptionDeps, input: AdoptionInputs): Promise<EngineBinding | undefined> {
  if (deps.pools === undefined) return undefined;
  const found = findBinding(input);
  if (found?.from === "pool") {
    if (!input.isOver) await takeOverPoolObjects(deps, input.ref, found.pod);
    return found;
  }
  if (found !== undefined) return found;
  if (input.held) return coldBinding(input.ref, input.snapshot, undefined);
  // The pod is claimed only for a snapshot the server holds (a refused one stops the Run in the child writes).
  if (await input.snapshot.accepted) return coldBinding(input.ref, input.snapshot, undefined);
  return adopt({ ...deps, pools: deps.pools }, input);
}

/** Adopt a ready pool pod, or record why the Run starts cold. */
async function adopt(deps: AdoptionDeps & { pools: PoolLedger }, input: AdoptionInputs): Promise<EngineBinding> {
  const { ref, snapshot } = input;
  const agent = snapshot.controller.agent.name;
  const key = buildAgentKey(ref.namespace, agent);
  const uid = deps.cache.get("agent", ref.namespace, agent)?.metadata.uid;
  const pool = computeEffectivePolicy(deps.policy())?.spec.pools.find((p) => p.agent === key);
  if (uid === undefined || pool === undefined) return coldBinding(ref, snapshot, "cold");
  const base: AdoptionInput = {
    pool,
    runHash: computePoolHash(buildPoolTemplate({ namespace: ref.namespace, name: agent, uid }, snapshot, pool), deps.settings),
    workspace: snapshot.controller.workspace,
    hostExec: hasHostStages(snapshot.runPolicy),
    mcpSecrets: snapshot.controller.mcpSecrets.some((s) => s.mounted),
    pods: listPoolPods(deps.cache, key),
  };
  const lost = new Set<string>();
  for (;;) {
    const decision = decideAdoption({ ...base, lost });
    if (decision.kind === "no-pool") return coldBinding(ref, snapshot, "cold");
    if (decision.kind === "miss") {
      deps.pools.missed(key, decision.reason);
      return coldBinding(ref, snapshot, "cold");
    }
    if (await claimPoolPod(deps.writer, ref, uid, decision.pod)) {
      deps.pools.adopted(key);
      await takeOverPoolObjects(deps, ref, decision.pod);
      // Every pod a Run adopts now carries the label: one made before it has another pool hash and never matches.
      return poolBinding(decision.pod, true);
    }
    lost.add(decision.pod);
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

/**
 * The adopted pod's claim and identity become the Run's (labelled and owned by it), each read and written back at
 * the version read; skipped when the cache shows them the Run's already, so a later pass finishes an interrupted one.
 * So do the pool's sandbox pods made for that pod ({@link claimPoolSandboxPods}).
 */
async function takeOverPoolObjects(deps: AdoptionDeps, ref: RunRef, pod: string): Promise<void> {
  const { claim, identity } = listAdoptedObjects(pod);
  const sandboxes = claimPoolSandboxPods(deps, ref, pod);
  await Promise.all([sandboxes, ...[claim, ...identity].map(async (id) => {
    const [kind = "", name = ""] = id.split("/");
    const resource = RESOURCE_OF[kind]!;
    if (isOwnedBy(deps.cache.get(resource, ref.namespace, name), ref.uid)) return;
    const live = await deps.writer.read(resource, ref.namespace, name);
    if (live === undefined || isOwnedBy(live, ref.uid)) return;
    await deps.writer.replace(buildAdoptedObject(live, ref), live.metadata.resourceVersion);
  })]);
}

/**
 * The sandbox pods the pool made for pool pod `pod` (docs/controller.md, "Warm sandbox pods"), each claimed as the
 * pod was: read now, still unbound, the Agent's and paired with `pod`, and written back labelled, annotated and
 * owned by the Run at the version read. One the pool retired first (or that is gone) is not taken; the Run's child
 * writes then make it cold under the same name. One the Run does not plan is pruned with its other children.
 */
async function claimPoolSandboxPods(deps: AdoptionDeps, ref: RunRef, pod: string): Promise<void> {
  const paired = deps.cache.list("pod", ref.namespace).filter((p) => isPoolSandboxPod(p) && p.metadata.annotations?.[ANNOTATION.poolPair] === pod && !isOwnedBy(p, ref.uid));
  await Promise.all(paired.map(async (cached) => {
    const live = await deps.writer.read("pod", ref.namespace, cached.metadata.name);
    const agentOwned = live?.metadata.ownerReferences?.some((r) => r.controller && r.kind === KIND.agent) ?? false;
    if (live === undefined || live.metadata.deletionTimestamp || !agentOwned || live.metadata.labels?.[LABEL.poolState] !== POOL_STATE.ready || live.metadata.annotations?.[ANNOTATION.poolPair] !== pod) return;
    try {
      await deps.writer.replace(buildAdoptedObject(live, ref), live.metadata.resourceVersion);
    } catch (err) {
      if (!isApiStatus(err, 409) && !isApiStatus(err, 404)) throw err;
    }
  }));
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
