// Writing a Run's children. A pod waits only for what it cannot go without: its ServiceAccount (admission refuses a
// pod whose account does not exist), the NetworkPolicy that isolates it and, on the pass that pins the Run, the
// start snapshot accepted on the server (`pinned`), and its workspace claim: created by this pass, or the one whose
// uid the Run's status records (own-claim.ts; one of that name someone else made is never taken over or mounted,
// whatever its labels and owner say). The Role and RoleBinding go out beside
// the pods, the RoleBinding after its Role (the sidecar retries its reads until its binding exists). Pods are
// created, never applied: a pod's spec cannot change, so a new one is a delete and a create. The account, RBAC and claim are created when the cache
// holds none of that name and applied when one drifted (CREATED_KINDS). The NetworkPolicy
// is kept exactly as desired (EXACT_KINDS): created, and replaced whole when its spec differs in any field.
import { LABEL } from "../../api/constants.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { ANNOTATION, type RunRef } from "../../sandbox/names.ts";
import { settleAll } from "../applied.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { EXACT_KINDS, isInPlace, isOwnedBy, type PodObject } from "../owned-children.ts";
import { decideOwnClaim, type OwnClaimRecord } from "./own-claim.ts";

/** What a pod is written after: admission needs its ServiceAccount, and it must never run unisolated. */
export const POD_PREREQUISITES: ReadonlySet<string> = new Set(["ServiceAccount", "NetworkPolicy"]);
/**
 * The children created with a POST when new (a POST costs the API server less than a server-side apply of the same
 * object, and a new Run's children are all new). What a POST writes is owned by an `Update` entry of our field
 * manager, which a later apply does not clear: a field the applied object no longer sets stays. For these kinds
 * nothing that could stay narrows what protects the Run (their lists are atomic: a Role's rules, a binding's
 * subjects; their maps are labels and a claim's requests). Pods are created (never applied again).
 */
const CREATED_KINDS: ReadonlySet<string> = new Set(["ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim"]);
/** The workspace claim the operator makes for a Run: pods wait for it, and it is never taken over from someone else. */
const CLAIM_KIND = "PersistentVolumeClaim";
/** Written after the other non-prerequisite children (its Role). */
const BINDING_KIND = "RoleBinding";
/** How soon a pass looks again while a pod it replaces terminates. */
const TERMINATING_RECHECK_MS = 1000;

/** What a Run's child writes did: written (and a requeue delay while a replaced pod terminates), or stopped short by a refused start snapshot. */
export type ChildWrites = { readonly refused?: undefined; readonly requeueAfterMs: number | undefined } | { readonly refused: true };

/** Writes one Run's children: `syncChildren` returns a requeue delay while a replaced pod terminates. */
export function createChildWriter(cache: ClusterCache, writer: ClusterWriter) {
  /** One desired pod: created when absent, deleted when its spec changed (pods are immutable); a requeue delay while one terminates. */
  async function syncPod(ref: RunRef, obj: KubeObject, live: boolean): Promise<number | undefined> {
    const current = cache.get("pod", ref.namespace, obj.metadata.name) as PodObject | undefined;
    // An engine pod that ended is the record of the run: never replaced (a new spec would run the agent again).
    if (!live) return undefined;
    if (current?.metadata.deletionTimestamp) return TERMINATING_RECHECK_MS;
    if (current && current.metadata.annotations?.[ANNOTATION.specHash] === obj.metadata.annotations?.[ANNOTATION.specHash] && isOwnedBy(current, ref.uid)) return undefined;
    // A warm pool's sandbox pod not (yet, in the cache) the Run's: claimed this pass, or the pool retires it; never deleted here.
    if (current && !isOwnedBy(current, ref.uid) && current.metadata.labels?.[LABEL.pool] !== undefined) return TERMINATING_RECHECK_MS;
    if (current) {
      // A different spec means delete, then create once it is gone.
      await writer.delete(current);
      return TERMINATING_RECHECK_MS;
    }
    await writer.create(obj);
    return undefined;
  }

  /**
   * The Run's own workspace claim: created, or, when the cache holds it, checked to be the one recorded (its uid);
   * never one that holds its name without being the operator's for this Run (taken over, it would be mounted
   * read-write with whatever someone put in it). One that names the Run as its controller but is not on record,
   * before any pod, is deleted so that the operator makes its own (own-claim.ts). Applied when it drifted. The uid
   * accepted goes into `record`.
   */
  async function ensureOwnClaim(ref: RunRef, claim: KubeObject, seen: { cached: KubeObject | undefined; startedBefore: boolean; record: OwnClaimRecord }): Promise<void> {
    const { cached, startedBefore, record } = seen;
    const found = cached ? { created: false, object: cached } : await writer.createOrFind(claim);
    const decided = decideOwnClaim(claim.metadata.name, { created: found.created, uid: found.object.metadata.uid, startedBefore, namesRun: isOwnedBy(found.object, ref.uid) }, record.recorded);
    if (!decided.ok) {
      // Deleted at its uid: a claim made under the name since is looked at again by the next pass.
      if (decided.remake && !found.object.metadata.deletionTimestamp) await writer.delete(found.object);
      throw new Error(decided.message);
    }
    record.accepted = decided.uid;
    if (cached && !isInPlace(claim, cached)) await writer.apply(claim);
  }

  /**
   * Write the desired children (pods only when absent or changed), then delete owned children no longer desired
   * but those named in `spare` (`Kind/name`: an adopted pool pod's objects, which are never built).
   * `pinned` answers once the start snapshot written in this pass is accepted (true) or refused (false; it rejects
   * when the write failed): nothing but the ServiceAccount and the NetworkPolicy is written before it, and no pod.
   * Refused, nothing more is written or pruned and the answer says so (`refused`); otherwise the requeue delay.
   * `claim`: what the Run's status records of its own workspace claim; the uid accepted this pass is written into it.
   */
  async function syncChildren(ref: RunRef, desired: KubeObject[], opts: { live: boolean; pinned?: Promise<boolean>; spare?: ReadonlySet<string>; claim?: OwnClaimRecord }): Promise<ChildWrites> {
    const { live, pinned = Promise.resolve(true), claim: record = {} } = opts;
    const owned = cache.listOwnedBy(ref.uid);
    const cachedOf = (obj: KubeObject) => owned.find((o) => o.kind === obj.kind && o.metadata.name === obj.metadata.name);
    const isClaim = (o: KubeObject) => o.kind === CLAIM_KIND;
    const writes = desired.filter((o) => o.kind !== "ConfigMap" && o.kind !== "Pod" && !isClaim(o) && !isInPlace(o, cachedOf(o)));
    // A child the cache does not hold is created when a later apply of it cannot leave a field behind that
    // matters (CREATED_KINDS); one that drifted or changed is applied, taking its fields back. The NetworkPolicy is
    // created or replaced whole (EXACT_KINDS).
    const write = (obj: KubeObject) => {
      const cached = cachedOf(obj);
      if (EXACT_KINDS.has(obj.kind)) return writer.replace(obj, cached?.metadata.resourceVersion);
      return !cached && CREATED_KINDS.has(obj.kind) ? writer.create(obj) : writer.apply(obj);
    };
    /** The writes of `objs` once the snapshot is accepted; none when it is refused. */
    const once = <T>(make: () => Promise<T[]>) => pinned.then((ok) => (ok ? make() : []));
    const prerequisites = settleAll<unknown>(writes.filter((o) => POD_PREREQUISITES.has(o.kind)).map(write));
    const startedBefore = owned.some((o) => o.kind === "Pod");
    const claims = once(() => settleAll(desired.filter(isClaim).map((c) => ensureOwnClaim(ref, c, { cached: cachedOf(c), startedBefore, record }))));
    const rest = writes.filter((o) => !POD_PREREQUISITES.has(o.kind) && !isClaim(o));
    // A RoleBinding after its Role: creating a binding to a Role the operator may not `bind` is checked against the
    // Role's rules, and the server refuses it (not found) while that Role does not exist yet.
    const roles = once(() => settleAll(rest.filter((o) => o.kind !== BINDING_KIND).map(write)));
    const others = roles.then(() => once(() => settleAll(rest.filter((o) => o.kind === BINDING_KIND).map(write))));
    // A pod mounts its workspace claim by name: it waits until the claim under that name is the one made for this Run.
    const pods = settleAll<unknown>([prerequisites, claims]).then(() => once(() => settleAll(desired.filter((o) => o.kind === "Pod").map((o) => syncPod(ref, o, live)))));
    // All settle before the pass goes on (no write still in flight); the first failure is the pass's.
    const [, , requeues, accepted] = (await settleAll<unknown>([claims, others, pods, pinned, roles])) as [unknown, unknown, (number | undefined)[], boolean];
    if (!accepted) return { refused: true };
    const wanted = new Set([...desired.map((o) => `${o.kind}/${o.metadata.name}`), ...(opts.spare ?? [])]);
    await settleAll(owned.filter((o) => !wanted.has(`${o.kind}/${o.metadata.name}`) && !o.metadata.deletionTimestamp).map((o) => writer.delete(o)));
    return { requeueAfterMs: requeues.find((r) => r !== undefined) };
  }

  return { syncChildren };
}
