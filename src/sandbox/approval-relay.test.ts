import { describe, expect, it } from "vitest";
import { APPROVAL_RELAY_KEY, MAX_RELAYED_ANSWERS } from "../api/approval.ts";
import { LABEL } from "../api/constants.ts";
import { buildApprovalRelay, buildApprovalRelayObjects, type RelayedApproval } from "./approval-relay.ts";

const run = { name: "r", namespace: "team", uid: "uid-1" };
const approval = (name: string, extra: Partial<RelayedApproval> = {}, spec: Record<string, unknown> = {}): RelayedApproval => ({
  metadata: { name, uid: `u-${name}`, creationTimestamp: `2026-01-01T00:00:0${name.length}Z`, labels: { [LABEL.runUid]: "uid-1" } },
  spec: { runRef: { name: "r" }, approvalId: "gate-1", decision: "allowOnce", reason: "ok", approvedBy: "alice", ...spec },
  ...extra,
});

describe("buildApprovalRelay", () => {
  it("relays the bound, valid, unconsumed answers with the approver and reason, under the Run's uid", () => {
    const cm = buildApprovalRelay(run, "agent", [
      approval("a"),
      approval("stale", { metadata: { name: "stale", uid: "u-s", labels: { [LABEL.runUid]: "uid-0" } } }),
      approval("done", { status: { consumed: true } }),
      approval("bad", {}, { decision: "maybe" }),
      approval("elsewhere", {}, { runRef: { name: "other" } }),
    ]) as unknown as { metadata: { name: string; ownerReferences: { controller: boolean }[] }; data: Record<string, string> };
    expect(cm.metadata.name).toBe("r-approvals");
    expect(cm.metadata.ownerReferences[0]!.controller).toBe(false);
    expect(cm.data).toEqual({
      [APPROVAL_RELAY_KEY.runUid]: "uid-1",
      "a-u-a": JSON.stringify({ approval: "a", approvalId: "gate-1", decision: "allowOnce", reason: "ok", approvedBy: "alice" }),
    });
  });
  it("holds at most MAX_RELAYED_ANSWERS answers", () => {
    const many = Array.from({ length: MAX_RELAYED_ANSWERS + 5 }, (_, i) => approval(`a${i}`));
    const cm = buildApprovalRelay(run, "agent", many) as unknown as { data: Record<string, string> };
    expect(Object.keys(cm.data).length).toBe(MAX_RELAYED_ANSWERS + 1);
  });
});

describe("buildApprovalRelayObjects", () => {
  type Role = { metadata: { name: string; ownerReferences: { controller: boolean }[] }; rules?: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames: string[] }[] };
  it("grants the Run's sidecar get on exactly the relayed Approvals, and relays them", () => {
    const { role, roleBinding, relay } = buildApprovalRelayObjects(run, "agent", [approval("b"), approval("done", { status: { consumed: true } }), approval("a")]);
    const r = role as unknown as Role;
    expect(r.metadata.name).toBe("r-approval-reader");
    expect(r.metadata.ownerReferences[0]!.controller).toBe(false);
    expect(r.rules).toEqual([{ apiGroups: ["leviath.dev"], resources: ["approvals"], verbs: ["get"], resourceNames: ["a", "b"] }]);
    expect(roleBinding).toMatchObject({ roleRef: { kind: "Role", name: "r-approval-reader" }, subjects: [{ kind: "ServiceAccount", name: "r-sidecar", namespace: "team" }] });
    expect(Object.keys((relay as unknown as { data: Record<string, string> }).data).sort()).toEqual(["a-u-a", "a-u-b", APPROVAL_RELAY_KEY.runUid]);
  });

  it("grants it to the account the sidecar runs as: an adopted pool pod's own", () => {
    const { roleBinding } = buildApprovalRelayObjects(run, "agent", [approval("a")], "agent-pool-0123456789");
    expect(roleBinding).toMatchObject({ subjects: [{ kind: "ServiceAccount", name: "agent-pool-0123456789", namespace: "team" }] });
  });
  it("has no rule at all while nothing is relayed (an empty resourceNames would mean every Approval)", () => {
    const { role } = buildApprovalRelayObjects(run, "agent", [approval("done", { status: { consumed: true } })]);
    expect((role as unknown as Role).rules).toEqual([]);
  });
});
