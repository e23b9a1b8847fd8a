import { describe, expect, it } from "vitest";
import { LABEL } from "../../api/constants.ts";
import { checkRelayedApproval, type ReadApproval } from "./relayed-approval.ts";

const ref = { approvalUid: "u-1", approval: "ok", run: "r", runUid: "run-uid" };
const read = (extra: Partial<ReadApproval> = {}, spec: Record<string, unknown> = {}): ReadApproval => ({
  metadata: { name: "ok", uid: "u-1", labels: { [LABEL.runUid]: "run-uid" } },
  spec: { runRef: { name: "r" }, approvalId: "gate-1", decision: "allowOnce", reason: "fine", approvedBy: "alice", ...spec },
  ...extra,
});

describe("checkRelayedApproval", () => {
  it("answers with the Approval's own spec when it is bound to this Run and unconsumed", () => {
    expect(checkRelayedApproval(read(), ref)).toEqual({ spec: { runRef: { name: "r" }, approvalId: "gate-1", decision: "allowOnce", reason: "fine", approvedBy: "alice" } });
  });
  it.each([
    ["missing", undefined, "no Approval 'ok'"],
    ["another uid", read({ metadata: { name: "ok", uid: "u-2", labels: { [LABEL.runUid]: "run-uid" } } }), "uid u-2"],
    ["unbound", read({ metadata: { name: "ok", uid: "u-1" } }), "not bound to this Run"],
    ["bound elsewhere", read({ metadata: { name: "ok", uid: "u-1", labels: { [LABEL.runUid]: "other" } } }), "not bound to this Run"],
    ["being deleted", read({ metadata: { name: "ok", uid: "u-1", labels: { [LABEL.runUid]: "run-uid" }, deletionTimestamp: "2026-01-01T00:00:00Z" } }), "being deleted"],
    ["consumed", read({ status: { consumed: true } }), "consumed already"],
    ["invalid", read({}, { decision: "maybe" }), "invalid spec"],
    ["another Run", read({}, { runRef: { name: "other" } }), "names Run 'other'"],
  ])("refuses one %s", (_what, approval, reason) => {
    const out = checkRelayedApproval(approval, ref);
    expect(out).toHaveProperty("refused");
    expect((out as { refused: string }).refused).toContain(reason);
  });
});
