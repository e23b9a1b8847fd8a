import { describe, expect, it } from "vitest";
import { EMPTY_POLICY, LeviathPolicySpecSchema } from "../../api/leviath-policy.ts";
import { buildEnforcedRecord, decideInForce, decideModeChange } from "./enforced-policy.ts";
import { computeEffectivePolicy, computePolicyState } from "./policy-state.ts";

const strict = { toolPermissions: { shell: "deny" } };
const parsed = (spec: Record<string, unknown>) => LeviathPolicySpecSchema.parse(spec);
const obj = (spec: Record<string, unknown>, generation: number, inForce?: { generation: number; spec: string }) => ({ spec, metadata: { generation, uid: "u1" }, ...(inForce ? { status: { inForce } } : {}) });

describe("decideModeChange", () => {
  it.each([
    ["enforce", "warn", "loosened"],
    ["enforce", "audit", "loosened"],
    ["warn", "audit", "loosened"],
    ["audit", "warn", "tightened"],
    ["warn", "enforce", "tightened"],
    ["audit", "enforce", "tightened"],
    ["warn", "warn", undefined],
    [undefined, "audit", undefined],
  ] as const)("%s -> %s: %s", (before, after, change) => {
    expect(decideModeChange(before, after)).toBe(change);
  });
});

describe("computePolicyState with enforcement modes", () => {
  it("an enforced generation is the policy in force, with no candidate (the default mode)", () => {
    const state = computePolicyState(obj(strict, 3), undefined);
    expect(state).toEqual({ kind: "valid", spec: parsed(strict), generation: 3, uid: "u1" });
    expect(parsed({}).enforcement).toBe("enforce");
  });

  it("a warn generation is a candidate; the remembered enforced one stays in force", () => {
    const state = computePolicyState(obj({ ...strict, enforcement: "warn" }, 4), { spec: parsed({}), generation: 3 });
    expect(state).toMatchObject({ kind: "valid", spec: parsed({}), generation: 3, candidate: { generation: 4, enforcement: "warn", spec: parsed({ ...strict, enforcement: "warn" }) } });
    expect(computeEffectivePolicy(state)).toMatchObject({ generation: 3, spec: parsed({}) });
  });

  it("after a restart, the enforced generation recorded on the status stays in force", () => {
    const record = buildEnforcedRecord({ toolPermissions: { shell: "ask" } }, 2);
    const state = computePolicyState(obj({ ...strict, enforcement: "audit" }, 5, record), undefined);
    expect(state).toMatchObject({ kind: "valid", generation: 2, spec: parsed({ toolPermissions: { shell: "ask" } }), candidate: { generation: 5, enforcement: "audit" } });
  });

  it("with no generation ever enforced, upstream's defaults (what was in force without a policy) stay in force", () => {
    expect(computePolicyState(obj({ ...strict, enforcement: "audit" }, 1), undefined)).toMatchObject({ kind: "valid", generation: 0, spec: EMPTY_POLICY, candidate: { generation: 1 } });
  });

  it("fails closed on a record that does not hold an enforced policy: new Runs wait", () => {
    for (const spec of ["{ not json", JSON.stringify({ enforcement: "warn" }), JSON.stringify({ toolPermissions: "x" })]) {
      const state = computePolicyState(obj({ enforcement: "warn" }, 6, { generation: 5, spec }), undefined);
      expect(state).toMatchObject({ kind: "invalid", message: expect.stringContaining("status.inForce (generation 5) does not hold an enforced policy") });
      expect(computeEffectivePolicy(state)).toBeUndefined();
    }
  });

  it("an unknown mode is invalid, and the last enforced generation stays in force (remembered or recorded)", () => {
    const remembered = computePolicyState(obj({ enforcement: "log-only" }, 7), { spec: parsed(strict), generation: 6 });
    expect(remembered).toMatchObject({ kind: "invalid", message: expect.stringContaining("spec.enforcement"), lastGood: { generation: 6 } });
    const recorded = computePolicyState(obj({ enforcement: "log-only" }, 7, buildEnforcedRecord(strict, 6)), undefined);
    expect(recorded).toMatchObject({ kind: "invalid", lastGood: { generation: 6, spec: parsed(strict) } });
  });

  it("decideInForce prefers what is remembered over the record", () => {
    expect(decideInForce({ spec: parsed(strict), generation: 9 }, buildEnforcedRecord({}, 2))).toMatchObject({ ok: true, value: { generation: 9 } });
  });
});
