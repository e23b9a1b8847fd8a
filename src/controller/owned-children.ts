// What the Run and pool controllers share about the children they own: a pod as the cache keeps it, which uid
// controls an object, and whether a child is in place (nothing to write). Neither controller owns this module.
import type { KubeObject } from "../kube/objects.ts";
import { isApplied, isExactly } from "./applied.ts";

/** A pod as the reconcilers read it from the cache. */
export type PodObject = KubeObject & {
  status?: {
    phase?: string; reason?: string; message?: string;
    /** Each condition's type and status; a PodScheduled=False one keeps the scheduler's reason and message too. */
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: { name: string; state?: { terminated?: { exitCode?: number; reason?: string; message?: string } } }[];
  };
  metadata: { uid?: string; deletionTimestamp?: unknown; annotations?: Record<string, string> };
};

/**
 * The children whose whole spec is ours: the NetworkPolicy that isolates the Run. Any field in it that we do not
 * set widens or narrows the isolation: an `egress` or `ingress` rule a namespace editor adds lets traffic through,
 * a key added to its podSelector leaves pods unselected, and an apply keeps both (they are someone else's fields).
 * So its spec is compared whole, it is created with a POST (no apply on a first pod's path) and a drifted one is
 * replaced with a PUT of the whole object, which leaves no field of anyone else's behind.
 */
export const EXACT_KINDS: ReadonlySet<string> = new Set(["NetworkPolicy"]);

/** Whether this uid is the object's controller. */
export function isOwnedBy(obj: KubeObject | undefined, uid: string): boolean {
  return obj?.metadata.ownerReferences?.some((r) => r.controller && r.uid === uid) ?? false;
}

/**
 * Whether the live child is what we write: for EXACT_KINDS its spec is exactly ours (server defaults included: the
 * NetworkPolicy we write sets every field the server would default), for the others every field we set has our
 * value (isApplied); the metadata we set is compared as for any child.
 */
export function isInPlace(desired: KubeObject, live: KubeObject | undefined): boolean {
  return EXACT_KINDS.has(desired.kind) ? isExactly(desired, live) : isApplied(desired, live);
}
