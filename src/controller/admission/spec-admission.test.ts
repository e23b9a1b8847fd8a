import { describe, expect, it } from "vitest";
import { computeAdmissionProblem } from "./spec-admission.ts";

const meta = { name: "a", namespace: "team" };

describe("computeAdmissionProblem", () => {
  it("names the read-path entry of an Agent that does not parse", () => {
    expect(computeAdmissionProblem("Agent", { metadata: meta, spec: { readPaths: { allow: ["/ok", "regex:/x)|(.*"] } } })).toMatch(/^spec\.readPaths\.allow\[1\]: read_paths entry 'regex:\/x\)\|\(\.\*'/);
  });
  it("admits a valid Agent whatever the policy would grant it", () => {
    expect(computeAdmissionProblem("Agent", { metadata: meta, spec: { image: "anything:1", readPaths: { allow: ["/data"] } } })).toBeUndefined();
  });
  it("names a CEL rule of the policy that does not compile, and a grant that does not parse", () => {
    expect(computeAdmissionProblem("LeviathPolicy", { metadata: { name: "cluster" }, spec: { taint: { rules: [{ name: "z", expression: "true" }, { name: "b", expression: "tool ==" }] } } }))
      .toMatch(/^spec\.taint\.rules\[1\] \(b\): compile-error: /);
    expect(computeAdmissionProblem("LeviathPolicy", { metadata: { name: "cluster" }, spec: { readPaths: { global: ["/ok", "regex:/x)|(.*"] } } })).toMatch(/^spec\.readPaths\.global\[1\]: /);
  });
  it("names an unknown key of a Run and of an Approval", () => {
    expect(computeAdmissionProblem("Run", { metadata: meta, spec: { agentRef: { name: "x" }, moed: "yolo" } })).toBe('spec: Unrecognized key: "moed"');
    expect(computeAdmissionProblem("Approval", { metadata: meta, spec: { runRef: { name: "r" }, approvalId: "1", decision: "maybe" } })).toMatch(/^spec\.decision: /);
  });
  it("admits an update that leaves the stored spec as it was, and refuses one that changes it to something invalid", () => {
    const bad = { metadata: meta, spec: { readPaths: { allow: ["regex:/x)|(.*"] } } };
    expect(computeAdmissionProblem("Agent", bad, structuredClone(bad))).toBeUndefined();
    expect(computeAdmissionProblem("Agent", bad, { metadata: meta, spec: {} })).toBeDefined();
  });
  it("refuses a kind it does not know (fail closed)", () => {
    expect(computeAdmissionProblem("Secret", { metadata: meta })).toContain("not one the leviath webhook checks");
  });
});
