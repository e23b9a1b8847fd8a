// The start snapshot `<run>-policy` is checked by content, not trusted on its owner reference: anyone who may
// create ConfigMaps in the namespace can plant one under that name with an owner reference to the Run (before the
// controller creates it), or delete the immutable one and recreate it with wider grants, other volumes or another
// image. The controller accepts the ConfigMap it finds only when its data is the snapshot it just resolved (on
// creation), or when its digest is the one recorded in `status.snapshotSha256` (every later pass), as it does for
// resumed snapshots (run-resume.ts).
import { computeSnapshotDataSha256 } from "../../io/snapshot-digest.ts";
import { isSameStatus } from "../conditions.ts";

/**
 * Why the ConfigMap found is not this run's start snapshot (undefined: it is), given what this pass knows;
 * `dataSha256`, the digest of `data` when the caller has it already.
 */
export function checkStartSnapshot(name: string, data: Readonly<Record<string, string>> | undefined, expected: { readonly resolved?: Record<string, string>; readonly sha256?: string; readonly neverPinned?: boolean }, dataSha256?: string): string | undefined {
  if (data === undefined) return `ConfigMap '${name}' holds no data`;
  // A Run that is over without ever having pinned a snapshot has none of its own: whatever holds the name is not it.
  const notOurs = expected.resolved !== undefined ? !isSameStatus(data, expected.resolved) : expected.neverPinned === true;
  if (notOurs) {
    return `ConfigMap '${name}' exists and is not the snapshot this Run resolved; it was not written by the controller (delete it and the Run to start again)`;
  }
  if (expected.sha256 !== undefined && (dataSha256 ?? computeSnapshotDataSha256(data)) !== expected.sha256) {
    return `ConfigMap '${name}' no longer holds the snapshot pinned at start (its SHA-256 is not status.snapshotSha256); a started Run is never resolved again`;
  }
  return undefined;
}
