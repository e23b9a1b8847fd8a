import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema } from "../api/leviath-policy.ts";
import type { RunPolicy } from "../api/run-policy.ts";
import { buildResumeConfigMap, buildResumeSnapshotName, checkResumedRunPolicy, computeResumedGrants, listResumeSnapshotNames, parseResumedRunPolicy } from "./resume-snapshot.ts";
import { RUN, snapshotOf } from "./test-fixtures.ts";

const AGENT = { image: "r:1", readPaths: { allow: ["/data/a", "/data/b"] }, toolPermissions: { shell: "ask" as const } };
const base = snapshotOf(AGENT, { readPaths: { global: ["/data/a"] }, toolPermissions: { web_fetch: "ask" } }).runPolicy;
const policy = (spec: object, generation = 9) => ({ spec: LeviathPolicySpecSchema.parse(spec), generation });

describe("computeResumedGrants", () => {
  it("takes the grants from the current policy, by the pinned namespace/name key, and keeps everything else pinned", () => {
    const now = policy({ readPaths: { perAgent: { "team-a/notes": ["/data/b"] } }, toolPermissions: { web_fetch: "allow" }, security: { taintTracking: true } });
    const r = computeResumedGrants(base, base, now, 1);
    expect(r).toMatchObject({ added: ["/data/b"], removed: ["/data/a"], changed: true });
    expect(r.runPolicy.readPaths).toEqual({ declared: ["/data/a", "/data/b"], granted: ["/data/b"], allowBlueprintReadPaths: false, resumed: { sequence: 1, policyGeneration: 9 } });
    expect(r.runPolicy.toolPermissions).toEqual(base.toolPermissions);
    expect(r.runPolicy.taint).toEqual(base.taint);
    expect(checkResumedRunPolicy(base, r.runPolicy)).toBeUndefined();
  });

  it("says when nothing changed, compared with the snapshot in force rather than the base", () => {
    const grantsB = policy({ readPaths: { global: ["/data/a", "/data/b"] } });
    const first = computeResumedGrants(base, base, grantsB, 1);
    expect(first.added).toEqual(["/data/b"]);
    const second = computeResumedGrants(base, first.runPolicy, grantsB, 2);
    expect(second).toMatchObject({ changed: false, added: [], removed: [] });
  });

  it("counts the blueprint override as a change", () => {
    const r = computeResumedGrants(base, base, policy({ readPaths: { global: ["/data/a"], allowBlueprintReadPaths: true } }), 1);
    expect(r).toMatchObject({ changed: true, added: [], removed: [], allowBlueprintReadPaths: { before: false, after: true } });
  });
});

describe("checkResumedRunPolicy", () => {
  const resumed = computeResumedGrants(base, base, policy({ readPaths: { global: ["/data/b"] } }), 1).runPolicy;

  it.each([
    ["a permission", (p: RunPolicy) => ({ ...p, toolPermissions: { ...p.toolPermissions, ceiling: { shell: "allow" as const } } }), "toolPermissions"],
    ["the declarations", (p: RunPolicy) => ({ ...p, readPaths: { ...p.readPaths, declared: ["/"] } }), "readPaths"],
    ["the mode", (p: RunPolicy) => ({ ...p, launch: { ...p.launch, mode: "yolo" as const } }), "launch"],
    ["a sandbox", (p: RunPolicy) => ({ ...p, stages: p.stages.map((s) => ({ ...s, sandbox: { ...s.sandbox, network: !s.sandbox.network } })) }), "stages"],
    ["the taint rules", (p: RunPolicy) => ({ ...p, taint: { ...p.taint, tracking: !p.taint.tracking } }), "taint"],
  ])("refuses a snapshot that also changes %s", (_what, change, key) => {
    expect(checkResumedRunPolicy(base, change(resumed))).toBe(`it changes '${key}', which a resume never re-resolves (only readPaths.granted and readPaths.allowBlueprintReadPaths)`);
  });

  it("refuses a snapshot not marked as resumed", () => {
    expect(checkResumedRunPolicy(base, base)).toBe("it is not marked as a resumed snapshot (readPaths.resumed)");
  });
});

describe("the resumed snapshot's ConfigMap", () => {
  it("is immutable, named by sequence, owned by the Run but not as controller, and parses back", () => {
    const resumed = computeResumedGrants(base, base, policy({ readPaths: { global: ["/data/b"] } }), 3).runPolicy;
    const cm = buildResumeConfigMap(RUN, "notes", resumed, { sequence: 3, token: "t", policyGeneration: 9, added: ["/data/b"], removed: ["/data/a"], allowBlueprintReadPaths: { before: false, after: false } }) as unknown as { immutable?: boolean; metadata: { name: string; ownerReferences?: { controller?: boolean; uid: string }[] }; data: Record<string, string> };
    expect(cm.immutable).toBe(true);
    expect(cm.metadata.name).toBe("digest-1-policy-r03");
    expect(cm.metadata.ownerReferences).toMatchObject([{ uid: RUN.uid, controller: false }]);
    expect(parseResumedRunPolicy(cm.data["run-policy.json"])).toEqual({ ok: true, value: resumed });
    expect(parseResumedRunPolicy("{")).toMatchObject({ ok: false, message: expect.stringMatching(/^run-policy\.json: not JSON/) });
  });

  it("has one of 16 names", () => {
    expect(listResumeSnapshotNames("x")).toHaveLength(16);
    expect(buildResumeSnapshotName("x", 16)).toBe("x-policy-r16");
  });
});
