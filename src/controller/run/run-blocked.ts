// Why a Run may not go on (yet): the answer of pinning, the workspace check and the pass's other refusals, as a
// value the Run pass plans its blocked status from.
import { REASON } from "../../api/status.ts";

/** A Run that may not go on; `sha256`: the digest of the start snapshot this pass accepted before it was stopped. */
export type Blocked = { blocked: true; phase: "Pending" | "Failed"; reason: string; message: string; recheckMs?: number; sha256?: string };

/** The Run fails: its start snapshot is not (or no longer) what it pinned. */
export const failedSnapshot = (message: string): Blocked => ({ blocked: true, phase: "Failed", reason: REASON.snapshotInvalid, message });

/** The Run waits for something outside it. */
export const pendingOn = (reason: string, message: string): Blocked => ({ blocked: true, phase: "Pending", reason, message });
