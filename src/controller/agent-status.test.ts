import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema } from "../api/policy.ts";
import { computeAgentStatus, type AgentStatusInput } from "./agent-status.ts";
import { buildConditions } from "./conditions.ts";
import { computeEffectivePolicy, computePolicyState, type PolicyState } from "./policy-state.ts";

const valid = (spec: Record<string, unknown>, generation = 4): PolicyState => ({ kind: "valid", spec: LeviathPolicySpecSchema.parse(spec), generation });
const input = (spec: unknown, over: Partial<AgentStatusInput> = {}): AgentStatusInput => ({
  namespace: "team-a", name: "cto", generation: 2, spec, policy: { kind: "absent" }, previous: undefined, now: "2026-01-01T00:00:00Z", ...over,
});

describe("computeAgentStatus", () => {
  it("names the field of a schema violation", () => {
    const s = computeAgentStatus(input({ stages: [{ name: "a" }, { name: "a" }] }));
    expect(s.valid).toBe(false);
    expect(s.findings).toEqual([{ severity: "error", code: "invalid-blueprint", message: "spec.stages[1].name: duplicate stage 'a'" }]);
    expect(s.conditions?.[0]).toMatchObject({ type: "Valid", status: "False", reason: "InvalidSpec", observedGeneration: 2 });
  });

  it("refuses a self-declared name that is not the object's", () => {
    const s = computeAgentStatus(input({ agent: { name: "trusted" } }));
    expect(s.findings?.[0]?.message).toMatch(/^spec\.agent\.name: 'trusted' differs from metadata\.name 'cto'/);
  });

  it("grants by namespace/name and counts granted over declared", () => {
    const policy = valid({ readPaths: { perAgent: { "team-a/cto": ["/data/design"], "team-b/cto": ["/data/finance"] } } });
    const s = computeAgentStatus(input({ readPaths: { allow: ["/data/design", "/data/finance"] } }, { policy }));
    expect(s.valid).toBe(true);
    expect(s.readPaths).toEqual({ declared: 2, granted: 1, display: "1/2" });
    expect(s.policyGeneration).toBe(4);
    expect(s.findings?.map((f) => [f.severity, f.code])).toEqual([["warning", "read-paths-not-granted"], ["note", "read-paths-declared"]]);
    expect(s.conditions?.[0]).toMatchObject({ status: "True", message: "valid, with 1 warning" });
  });

  it("resolves each stage's sandbox against the floor", () => {
    const policy = valid({ sandbox: { kind: "container", image: "base:1", network: false } });
    const s = computeAgentStatus(input({ stages: [{ name: "a", sandbox: { kind: "none" } }, { name: "b", sandbox: { kind: "gvisor" } }] }, { policy }));
    expect(s.resolvedSandboxes?.map((r) => [r.stage, r.kind, r.image, r.network, r.source])).toEqual([
      ["a", "container", "base:1", false, "policy"],
      ["b", "gvisor", "base:1", false, "clamped"],
    ]);
  });

  it("says it cannot judge while the policy is invalid with nothing to fall back on", () => {
    const s = computeAgentStatus(input({}, { policy: { kind: "invalid", generation: 1, message: "spec.x: bad" } }));
    expect(s.valid).toBeUndefined();
    expect(s.conditions?.[0]).toMatchObject({ status: "Unknown", reason: "InvalidPolicy" });
  });
});

describe("policy state", () => {
  it("keeps the last valid policy when the object turns invalid", () => {
    const good = computePolicyState({ spec: { readPaths: { global: ["/x"] } }, metadata: { generation: 1 } }, undefined);
    expect(good.kind).toBe("valid");
    const last = good.kind === "valid" ? { spec: good.spec, generation: good.generation } : undefined;
    const bad = computePolicyState({ spec: { readPaths: { perAgent: { "No Key": [] } } }, metadata: { generation: 2 } }, last);
    expect(bad).toMatchObject({ kind: "invalid", generation: 2 });
    expect(computeEffectivePolicy(bad)).toMatchObject({ generation: 1 });
    expect(computeEffectivePolicy(computePolicyState({ spec: { bogus: true } }, undefined))).toBeUndefined();
    expect(computeEffectivePolicy({ kind: "absent" })?.generation).toBeUndefined();
  });
});

describe("buildConditions", () => {
  it("keeps the transition time unless the status changed", () => {
    const first = buildConditions(undefined, [{ type: "A", status: "False", reason: "X", message: "m" }], "t1", 1);
    const same = buildConditions(first, [{ type: "A", status: "False", reason: "Y", message: "other" }], "t2", 2);
    const flipped = buildConditions(same, [{ type: "A", status: "True", reason: "Y", message: "other" }], "t3", 2);
    expect([first[0]!.lastTransitionTime, same[0]!.lastTransitionTime, flipped[0]!.lastTransitionTime]).toEqual(["t1", "t1", "t3"]);
    expect(same[0]!.observedGeneration).toBe(2);
  });
});
