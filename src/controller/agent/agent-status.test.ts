import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema } from "../../api/leviath-policy.ts";
import { computeAgentStatus, type AgentStatusInput } from "./agent-status.ts";
import { buildConditions } from "../conditions.ts";
import { computeEffectivePolicy, computePolicyState, type PolicyState } from "../leviath-policy/policy-state.ts";

const valid = (spec: Record<string, unknown>, generation = 4): PolicyState => ({ kind: "valid", spec: LeviathPolicySpecSchema.parse(spec), generation });
const input = (spec: unknown, over: Partial<AgentStatusInput> = {}): AgentStatusInput => ({
  namespace: "team-a", name: "cto", generation: 2, spec, policy: { kind: "absent" }, previous: undefined, now: "2026-01-01T00:00:00Z", ...over,
});

describe("computeAgentStatus", () => {
  it("names the field of a schema violation", () => {
    const s = computeAgentStatus(input({ stages: [{ name: "a" }, { name: "a" }] }));
    expect(s.valid).toBe(false);
    expect(s.findings).toEqual([{ severity: "error", code: "blueprint-invalid", message: "spec.stages[1].name: duplicate stage 'a'" }]);
    expect(s.conditions?.[0]).toMatchObject({ type: "Valid", status: "False", reason: "InvalidSpec", observedGeneration: 2 });
  });

  it("refuses a self-declared name that is not the object's", () => {
    const s = computeAgentStatus(input({ agent: { name: "trusted" } }));
    expect(s.findings?.[0]?.message).toMatch(/^spec\.agent\.name: 'trusted' differs from metadata\.name 'cto'/);
  });

  it("grants by namespace/name and counts granted over declared", () => {
    // A volume backs the grants (without one, read-path-grant-unbacked: grant-volumes.test.ts).
    const policy = valid({ readPaths: { perAgent: { "team-a/cto": ["/data/design"], "team-b/cto": ["/data/finance"] }, volumes: [{ path: "/data", volume: { configMap: { name: "data" } } }] } });
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

  it("advises the cluster fix: the LeviathPolicy's spec.readPaths.perAgent, keyed by namespace/name, never a config.toml stanza", () => {
    const s = computeAgentStatus(input({ readPaths: { allow: ["/data/design", "glob:/data/finance/**"] } }, { policy: valid({}) }));
    const notGranted = s.findings?.find((f) => f.code === "read-paths-not-granted");
    expect(notGranted?.fix).toBe('add to spec.readPaths.perAgent of the LeviathPolicy: "team-a/cto": ["/data/design", "glob:/data/finance/**"]');
    expect(JSON.stringify(s.findings)).not.toContain("config.toml");
  });

  it("reports every clamp of a sandbox block as a finding, with the LeviathPolicy field that causes it", () => {
    const policy = valid({ sandbox: { kind: "container", image: "debian:bookworm-slim", network: false, onUnavailable: "error", mounts: [{ path: "/opt/tools" }] } });
    const s = computeAgentStatus(input({
      sandbox: { kind: "namespace", image: "alpine:3", network: true, mounts: ["/opt/tools", "/srv/other"], onUnavailable: "warn" },
      stages: [{ name: "a" }, { name: "b", sandbox: { kind: "gvisor", image: "alpine:3" } }],
    }, { policy }));
    const clamps = s.findings?.filter((f) => f.code.startsWith("sandbox-")).map((f) => [f.code, f.stage, f.message, f.fix]);
    expect(clamps).toEqual([
      ["sandbox-kind-clamped", undefined, "spec.sandbox asks kind 'namespace'; the admin's floor raises it to 'container'", "the admin sets it: spec.sandbox.kind of the LeviathPolicy"],
      ["sandbox-image-clamped", undefined, "spec.sandbox asks image 'alpine:3'; the admin's policy runs 'debian:bookworm-slim' instead (source clamped)", "the admin sets it: spec.sandbox.image of the LeviathPolicy"],
      ["sandbox-network-clamped", undefined, "spec.sandbox asks network = true; the admin's policy turns network off", "the admin sets it: spec.sandbox.network of the LeviathPolicy"],
      ["sandbox-mounts-clamped", undefined, "spec.sandbox mounts /srv/other is dropped: the admin's policy does not offer it", "the admin sets it: spec.sandbox.mounts of the LeviathPolicy"],
      ["sandbox-on-unavailable-clamped", undefined, "spec.sandbox asks onUnavailable 'warn'; the admin's policy uses 'error'", "the admin sets it: spec.sandbox.onUnavailable of the LeviathPolicy"],
      ["sandbox-image-clamped", "b", "spec.stages[1].sandbox asks image 'alpine:3'; the admin's policy runs 'debian:bookworm-slim' instead (source clamped)", "the admin sets it: spec.sandbox.image of the LeviathPolicy"],
    ]);
    expect(s.findings?.filter((f) => f.code.startsWith("sandbox-")).every((f) => f.severity === "note")).toBe(true);
    expect(s.valid).toBe(true);
  });

  it("reports no clamp where the blueprint gets what it asked", () => {
    const policy = valid({ sandbox: { kind: "container", image: "alpine:3" } });
    const s = computeAgentStatus(input({ sandbox: { kind: "gvisor", image: "alpine:3", network: true } }, { policy }));
    expect(s.findings?.filter((f) => f.code.includes("clamped"))).toEqual([]);
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
