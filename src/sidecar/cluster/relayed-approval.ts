// What makes a relayed answer real. The relay ConfigMap only says which Approvals to read: anyone who may write
// ConfigMaps in the namespace (and any Run's sidecar, which may create ConfigMaps of any name) can write keys into
// it. So the sidecar reads each Approval it names (its approval-reader Role, which the controller writes, names
// exactly the Approvals bound to this Run that it relays) and answers with what that Approval says, never with
// the relay's copy.
import { ApprovalSpecSchema, type ApprovalSpec } from "../../api/approval.ts";
import { LABEL } from "../../api/constants.ts";

/** An Approval as read back from the API server. */
export interface ReadApproval {
  metadata: { name: string; uid?: string | undefined; labels?: Record<string, string> | undefined; deletionTimestamp?: unknown };
  spec?: unknown;
  status?: { consumed?: boolean } | undefined;
}

/** Which Approval the relay named, for which Run. */
export interface RelayedRef {
  /** The Approval's uid, as the relay's key carries it. */
  approvalUid: string;
  /** The Approval's name, as the relay's entry carries it. */
  approval: string;
  run: string;
  runUid: string;
}

/** The answer of an Approval that really is bound to this Run and not consumed yet, or why it is none. */
export function checkRelayedApproval(read: ReadApproval | undefined, ref: RelayedRef): { spec: ApprovalSpec } | { refused: string } {
  if (!read) return { refused: `no Approval '${ref.approval}'` };
  if (read.metadata.uid !== ref.approvalUid) return { refused: `Approval '${ref.approval}' has uid ${String(read.metadata.uid)}, not the relayed ${ref.approvalUid}` };
  if (read.metadata.labels?.[LABEL.runUid] !== ref.runUid) return { refused: `Approval '${ref.approval}' is not bound to this Run (uid ${ref.runUid})` };
  if (read.metadata.deletionTimestamp) return { refused: `Approval '${ref.approval}' is being deleted` };
  if (read.status?.consumed === true) return { refused: `Approval '${ref.approval}' is consumed already` };
  const spec = ApprovalSpecSchema.safeParse(read.spec);
  if (!spec.success) return { refused: `Approval '${ref.approval}' has an invalid spec` };
  if (spec.data.runRef.name !== ref.run) return { refused: `Approval '${ref.approval}' names Run '${spec.data.runRef.name}'` };
  return { spec: spec.data };
}
