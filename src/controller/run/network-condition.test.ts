import { describe, expect, it } from "vitest";
import { NetworkEnforcementSchema } from "../../api/leviath-policy.ts";
import type { Condition, NetworkEnforcementStatus } from "../../api/status.ts";
import { computeSandboxPlan } from "../../sandbox/sandbox-plan.ts";
import { RUN, snapshotOf } from "../../sandbox/test-fixtures.ts";
import { decideNetworkCondition, decideNetworkRefusal, ENFORCEMENT_UNCHECKED, isNetworkPolicyApplied, type NetworkConditionInput } from "./network-condition.ts";

const NOW = "2026-01-01T00:10:00Z";
const VERIFIED: NetworkEnforcementStatus = { state: "Verified", message: "refused", checkedAt: "2026-01-01T00:00:00Z" };
const NOT_ENFORCED: NetworkEnforcementStatus = { state: "NotEnforced", message: "a probe pod under a deny-all NetworkPolicy connected", checkedAt: "2026-01-01T00:00:00Z" };

function input(over: Partial<NetworkConditionInput> = {}): NetworkConditionInput {
  return { policyName: "r-isolate", closedStages: ["survey"], fallbackStages: [], policyMissing: false, enforcement: ENFORCEMENT_UNCHECKED, previous: undefined, nowIso: NOW, ...over };
}
const was = (reason: string, message = "m", status: Condition["status"] = "True"): Condition => ({ type: "NetworkIsolated", status, reason, message, lastTransitionTime: "2026-01-01T00:00:00Z" });

describe("decideNetworkCondition", () => {
  it("writes no condition when no stage has network = false", () => {
    expect(decideNetworkCondition(input({ closedStages: [] }))).toBeUndefined();
  });

  it.each([
    // Issue 41: an applied policy nobody saw enforced isolates nothing on a plugin that ignores it, so not True.
    ["applied, not verified (no probe asked for)", ENFORCEMENT_UNCHECKED, "Unknown", "NetworkPolicyApplied", /enforcement not verified: not verified on this cluster/],
    ["applied, the probe inconclusive", { state: "Unknown", message: "the probe's server pod did not start" }, "Unknown", "NetworkPolicyApplied", /enforcement not verified: the probe's server pod/],
    ["verified by the probe", VERIFIED, "True", "NetworkPolicyEnforced", /enforcement verified on this cluster at 2026-01-01T00:00:00Z/],
    ["seen not to be enforced", NOT_ENFORCED, "False", "NetworkNotEnforced", /does NOT enforce NetworkPolicy: a probe pod under a deny-all/],
  ] as const)("tells %s", (_name, enforcement, status, reason, message) => {
    const d = decideNetworkCondition(input({ enforcement }));
    expect(d).toMatchObject({ type: "NetworkIsolated", status, reason });
    expect(d!.message).toMatch(message);
    expect(d!.message).toContain("NetworkPolicy 'r-isolate' denies all ingress and egress");
  });

  it("says a fallback to the engine pod has network", () => {
    expect(decideNetworkCondition(input({ fallbackStages: ["survey"], enforcement: VERIFIED }))).toMatchObject({ status: "False", reason: "FellBackToHost" });
  });

  it("says a policy that went missing was re-created, and keeps saying it with the time of the restore", () => {
    const restored = decideNetworkCondition(input({ policyMissing: true, previous: was("NetworkPolicyApplied", "m", "Unknown") }))!;
    expect(restored).toMatchObject({ status: "Unknown", reason: "NetworkPolicyRestored" });
    expect(restored.message).toMatch(/^NetworkPolicy 'r-isolate' was missing and was re-created at 2026-01-01T00:10:00Z \(the sandbox pods were not isolated in between\); applied, enforcement not verified/);
    const later = decideNetworkCondition(input({ nowIso: "2026-01-01T01:00:00Z", enforcement: VERIFIED, previous: was(restored.reason, restored.message) }))!;
    expect(later).toMatchObject({ status: "True", reason: "NetworkPolicyRestored" });
    expect(later.message).toContain("re-created at 2026-01-01T00:10:00Z");
    expect(later.message).toContain("enforcement verified on this cluster");
  });

  it("calls a policy applied under any enforcement and missing now a restore, its status the enforcement's", () => {
    for (const [reason, status] of [["NetworkPolicyEnforced", "True"], ["NetworkNotEnforced", "False"], ["NetworkPolicyApplied", "Unknown"]] as const) {
      expect(isNetworkPolicyApplied(was(reason, "m", status))).toBe(true);
      const enforcement = status === "True" ? VERIFIED : status === "False" ? NOT_ENFORCED : ENFORCEMENT_UNCHECKED;
      expect(decideNetworkCondition(input({ policyMissing: true, enforcement, previous: was(reason, "m", status) }))).toMatchObject({ status, reason: "NetworkPolicyRestored" });
    }
    expect(isNetworkPolicyApplied(was("FellBackToHost", "m", "False"))).toBe(false);
    expect(isNetworkPolicyApplied(undefined)).toBe(false);
  });

  it("does not call the first creation a restore", () => {
    expect(decideNetworkCondition(input({ policyMissing: true }))!.reason).toBe("NetworkPolicyApplied");
    expect(decideNetworkCondition(input({ policyMissing: true, previous: was("FellBackToHost", "m", "False") }))!.reason).toBe("NetworkPolicyApplied");
  });
});

describe("decideNetworkRefusal", () => {
  const closed = computeSandboxPlan(RUN.name, snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3", network: false } }).runPolicy);
  const open = computeSandboxPlan(RUN.name, snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3", network: true } }).runPolicy);
  const refuse = NetworkEnforcementSchema.parse({ verify: true, namespace: "probes", onUnverified: "refuse" });
  const warn = NetworkEnforcementSchema.parse({ verify: true, namespace: "probes" });

  it("refuses a network = false Run that has not started while enforcement is not verified", () => {
    for (const enforcement of [ENFORCEMENT_UNCHECKED, NOT_ENFORCED]) {
      const message = decideNetworkRefusal({ plan: closed, started: false, enforcement, spec: refuse });
      expect(message).toMatch(/need network = false, and NetworkPolicy enforcement is not verified on this cluster \(LeviathPolicy spec.networkEnforcement.onUnverified is refuse\)/);
      expect(message).toContain(enforcement.state);
    }
  });

  it.each([
    ["verified", closed, false, VERIFIED, refuse],
    ["warn only", closed, false, NOT_ENFORCED, warn],
    ["no policy section", closed, false, NOT_ENFORCED, undefined],
    ["network = true only", open, false, NOT_ENFORCED, refuse],
    ["already started", closed, true, NOT_ENFORCED, refuse],
  ] as const)("lets the Run go when %s", (_name, plan, started, enforcement, spec) => {
    expect(decideNetworkRefusal({ plan, started, enforcement, spec })).toBeUndefined();
  });

  it("needs a namespace for the probe when verify is on, and names the field", () => {
    const parsed = NetworkEnforcementSchema.safeParse({ verify: true });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(["namespace"]);
  });
});
