import { describe, expect, it } from "vitest";
import { buildStrictKeysPolicy, buildStrictKeysValidations } from "./admission-policy.ts";
import { AGENT_CRD, CRD_DEFINITIONS, POLICY_CRD } from "./crd-definitions.ts";

describe("the strict-keys admission policy", () => {
  it("has one rule per object of each spec, each guarded by the kind and naming the known keys", () => {
    const rules = buildStrictKeysValidations(AGENT_CRD);
    const sandbox = rules.find((r) => r.messageExpression.startsWith("'spec.sandbox: "));
    expect(sandbox?.expression).toBe("!('spec' in object) || !('sandbox' in object['spec']) || object['spec']['sandbox'].all(k, k in ['kind', 'image', 'engine', 'network', 'mounts', 'persist', 'onUnavailable'])");
    const stageSandbox = rules.find((r) => r.messageExpression.startsWith("'spec.stages'") && r.messageExpression.includes(".sandbox: unknown key"));
    expect(stageSandbox?.messageExpression).toContain("string(object['spec']['stages'].indexOf(");
    // Verbatim parts (the runtime's) have no declared keys and no rule.
    expect(rules.some((r) => r.expression.includes("['blueprint'].all"))).toBe(false);
  });

  it("covers a map of objects by key (tool overrides)", () => {
    const rule = buildStrictKeysValidations(POLICY_CRD).find((r) => r.messageExpression.startsWith("'spec.taint.toolOverrides' + '.' + "));
    expect(rule?.expression).toContain("object['spec']['taint']['toolOverrides'].all(e, (");
  });

  it("matches creates and updates of all four kinds, and skips updates that leave the spec alone", () => {
    const [policy, binding] = buildStrictKeysPolicy(CRD_DEFINITIONS) as [{ spec: { matchConstraints: { resourceRules: { resources: string[] }[] }; matchConditions: { expression: string }[] } }, { spec: { validationActions: string[] } }];
    expect(policy.spec.matchConstraints.resourceRules[0]!.resources).toEqual(["agents", "runs", "leviathpolicies", "approvals"]);
    expect(policy.spec.matchConditions[0]!.expression).toContain("object.spec != oldObject.spec");
    expect(binding.spec.validationActions).toEqual(["Deny"]);
  });
});
