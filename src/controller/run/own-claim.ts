// Recognising the workspace claim the operator made for a Run (`<run>-workspace`). Whoever may create claims in the
// namespace can create one under that name first, with the Run's labels and an ownerReference naming its uid (a Run
// waiting unpinned, for its Agent or a ceiling, leaves all the time needed), so neither the name, the labels nor
// the owner prove anything. The operator's claim is the one the API server created for the controller's own
// request: its uid, which no other party chooses, is recorded in the Run's status (`status.workspaceClaimUid`), and
// a claim under the name with any other uid is never mounted.
//
// A pass can make the claim and stop before its status write records the uid (the controller killed, a status
// write refused): the next pass finds under the name a claim it cannot tell from a planted one. Such a claim that
// names this Run as its controller (as the operator's does, and as a planted one must to pass for it) while no pod
// of the Run exists is deleted, and the operator makes the Run's own again: nothing has been mounted from it, and a
// claim that declares itself the Run's child is the controller's to remove, as garbage collection would with the
// Run. A claim that does not name the Run is never deleted: the Run waits, naming it.

/** What a pass knows of the Run's own claim: the uid on record, and (filled in by the pass) the uid it accepted. */
export interface OwnClaimRecord {
  /** `status.workspaceClaimUid` as the pass read it. */
  readonly recorded?: string | undefined;
  /** The uid of the claim this pass found to be the operator's (created now, or the recorded one). */
  accepted?: string | undefined;
}

/** The claim under the Run's own name as a pass met it: made by this request (`created`), or found there. */
export interface ClaimSeen {
  readonly created: boolean;
  readonly uid: string | undefined;
  /**
   * The Run already had pods when no uid was on record: it was started by a controller that did not record one
   * (an upgrade) and its pods mount this claim already; it is taken as the operator's once, and its uid recorded.
   */
  readonly startedBefore: boolean;
  /** The claim names this Run (its uid) as its controller. */
  readonly namesRun: boolean;
}

/** Why a claim under the Run's own name is not the operator's (the message names the claim). */
export const foreignClaimMessage = (name: string): string => `PersistentVolumeClaim '${name}' exists and was not made by the operator for this Run`;

/**
 * The claim is not on record and names the Run as its controller, and no pod mounts it yet: delete it and make the
 * Run's own (the message says so on the Run while it goes).
 */
export const remadeClaimMessage = (name: string): string =>
  `PersistentVolumeClaim '${name}' names this Run as its owner but its uid is not on record (made by a pass that stopped before recording it, or by someone else): it is deleted, and the operator makes the Run's own once it is gone`;

/** What to do with the claim under the Run's own name: mount it (its uid to record), delete it and make it again, or refuse it. */
export type OwnClaimDecision =
  | { readonly ok: true; readonly uid: string }
  | { readonly ok: false; readonly remake: true; readonly message: string }
  | { readonly ok: false; readonly remake?: undefined; readonly message: string };

/** Whether the claim is the operator's for this Run: its uid to record, a claim to delete and make again, or the refusal; pure. */
export function decideOwnClaim(name: string, seen: ClaimSeen, recorded: string | undefined): OwnClaimDecision {
  const refused = { ok: false as const, message: foreignClaimMessage(name) };
  if (seen.uid === undefined || seen.uid === "") return refused;
  if (seen.created) return { ok: true, uid: seen.uid };
  if (recorded !== undefined) return seen.uid === recorded ? { ok: true, uid: seen.uid } : refused;
  if (seen.startedBefore) return { ok: true, uid: seen.uid };
  return seen.namesRun ? { ok: false, remake: true, message: remadeClaimMessage(name) } : refused;
}
