// Recognising the workspace claim the operator made for a Run (`<run>-workspace`). Whoever may create claims in the
// namespace can create one under that name first, with the Run's labels and an ownerReference naming its uid (a Run
// waiting unpinned, for its Agent or a ceiling, leaves all the time needed), so neither the name, the labels nor
// the owner prove anything. The operator's claim is the one the API server created for the controller's own
// request: its uid, which no other party chooses, is recorded in the Run's status (`status.workspaceClaimUid`), and
// a claim under the name with any other uid is never mounted. A claim found under the name before the controller
// made one never counts as its own.

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
}

/** Why a claim under the Run's own name is not the operator's (the message names the claim). */
export const foreignClaimMessage = (name: string): string => `PersistentVolumeClaim '${name}' exists and was not made by the operator for this Run`;

/** Whether the claim is the operator's for this Run: its uid to record, or the refusal; pure. */
export function decideOwnClaim(name: string, seen: ClaimSeen, recorded: string | undefined): { ok: true; uid: string } | { ok: false; message: string } {
  const refused = { ok: false as const, message: foreignClaimMessage(name) };
  if (seen.uid === undefined || seen.uid === "") return refused;
  if (seen.created) return { ok: true, uid: seen.uid };
  if (recorded !== undefined) return seen.uid === recorded ? { ok: true, uid: seen.uid } : refused;
  return seen.startedBefore ? { ok: true, uid: seen.uid } : refused;
}
