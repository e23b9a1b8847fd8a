import { describe, expect, it } from "vitest";
import { AgentSpecSchema } from "../../api/agent.ts";
import { LeviathPolicySpecSchema } from "../../api/leviath-policy.ts";
import { RunSpecSchema } from "../../api/run.ts";
import { buildRunSnapshot } from "../../sandbox/run-snapshot.ts";
import { SNAPSHOT_KEY } from "../../sandbox/run-snapshot.ts";
import { computeSnapshotSha256 } from "./run-resume.ts";
import { resolveRollout } from "./run-rollout.ts";
import { decideWouldFlipCondition } from "./would-flip-condition.ts";
import type { PolicyState } from "../leviath-policy/policy-state.ts";

const ref = { name: "r1", namespace: "team", uid: "uid-1" };
const written = { image: "img", stages: [{ name: "main" }] };
const run = RunSpecSchema.parse({ agentRef: { name: "a" } });
const spec = (s: Record<string, unknown> = {}) => LeviathPolicySpecSchema.parse(s);
const pinnedAt = (generation: number) => {
  const built = buildRunSnapshot({ agent: { name: "a", namespace: "team", generation: 1, spec: AgentSpecSchema.parse(written), written }, policy: { name: "cluster", generation, spec: spec() }, run });
  if (!built.ok) throw new Error(built.message);
  return built.value;
};
const valid = (generation: number, s = spec(), candidate?: { generation: number; enforcement: "warn" | "audit"; spec: ReturnType<typeof spec> }): PolicyState => ({ kind: "valid", spec: s, generation, ...(candidate ? { candidate } : {}) });
const policyText = (cm: { data?: Record<string, string> }) => JSON.parse(cm.data![SNAPSHOT_KEY.runPolicy]!) as { toolPermissions: { ceiling: Record<string, string> }; policyGeneration?: number };

describe("resolveRollout", () => {
  it("is nothing for a Run pinned to the generation in force with no candidate", () => {
    expect(resolveRollout({ ref, run, snapshot: pinnedAt(3), policy: valid(3), active: true })).toEqual({ status: undefined, configMaps: [] });
  });

  it("resolves a later generation in force from the pinned Agent, named with its digest", () => {
    const plan = resolveRollout({ ref, run, snapshot: pinnedAt(3), policy: valid(4, spec({ toolPermissions: { shell: "deny" } })), active: true });
    expect(plan.configMaps.map((c) => c.metadata.name)).toEqual(["r1-policy-enforced"]);
    const cm = plan.configMaps[0] as { data?: Record<string, string>; metadata: { ownerReferences?: { uid: string; controller?: boolean }[] } };
    expect(policyText(cm).toolPermissions.ceiling).toMatchObject({ shell: "deny" });
    expect(cm.metadata.ownerReferences).toEqual([expect.objectContaining({ uid: "uid-1", controller: true })]);
    expect(plan.status).toEqual({ enforced: { generation: 4, snapshot: "r1-policy-enforced", snapshotSha256: computeSnapshotSha256(cm.data![SNAPSHOT_KEY.runPolicy]!) } });
  });

  it("resolves a warn candidate beside it; the pinned generation in force needs no snapshot", () => {
    const plan = resolveRollout({ ref, run, snapshot: pinnedAt(3), policy: valid(3, spec(), { generation: 5, enforcement: "warn", spec: spec({ toolPermissions: { read_file: "deny" } }) }), active: true });
    expect(plan.configMaps.map((c) => c.metadata.name)).toEqual(["r1-policy-candidate"]);
    expect(policyText(plan.configMaps[0] as { data?: Record<string, string> }).toolPermissions.ceiling).toMatchObject({ read_file: "deny" });
    expect(plan.status).toEqual({ candidate: expect.objectContaining({ generation: 5, enforcement: "warn", snapshot: "r1-policy-candidate" }) });
  });

  it("is nothing for a Run that is not active", () => {
    expect(resolveRollout({ ref, run, snapshot: pinnedAt(3), policy: valid(4), active: false }).configMaps).toEqual([]);
  });

  it("keeps the last valid generation in force while an edit is invalid, with no candidate", () => {
    const invalid: PolicyState = { kind: "invalid", generation: 6, message: "bad", lastGood: { spec: spec({ toolPermissions: { shell: "deny" } }), generation: 5 } };
    const plan = resolveRollout({ ref, run, snapshot: pinnedAt(3), policy: invalid, active: true });
    expect(plan.status).toEqual({ enforced: expect.objectContaining({ generation: 5 }) });
    expect(resolveRollout({ ref, run, snapshot: pinnedAt(3), policy: { kind: "invalid", generation: 6, message: "bad" }, active: true }).configMaps).toEqual([]);
  });
});

describe("decideWouldFlipCondition", () => {
  const candidate = { generation: 5, enforcement: "warn" as const, snapshot: "r1-policy-candidate", snapshotSha256: "a".repeat(64) };
  it("is True while the sidecar reports flips against the warn candidate still out", () => {
    expect(decideWouldFlipCondition({ candidate }, { generation: 5, count: 2, last: "read_file: allow -> deny (x)" })).toEqual({
      type: "PolicyWouldFlip", status: "True", reason: "WouldFlip",
      message: "2 call(s) would be decided otherwise under the warn candidate, LeviathPolicy generation 5; last: read_file: allow -> deny (x) (kubectl leviath why)",
    });
  });

  it.each([
    ["an audit candidate", { candidate: { ...candidate, enforcement: "audit" as const } }, { generation: 5, count: 2 }],
    ["flips of an earlier candidate", { candidate }, { generation: 4, count: 2 }],
    ["no candidate out", {}, { generation: 5, count: 2 }],
    ["no flips", { candidate }, undefined],
  ])("is absent for %s", (_, rollout, flips) => {
    expect(decideWouldFlipCondition(rollout, flips)).toBeUndefined();
  });
});
