import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema } from "./leviath-policy.ts";
import { MAX_POOLS } from "./pools.ts";

const issuesOf = (spec: unknown) => {
  const parsed = LeviathPolicySpecSchema.safeParse(spec);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

describe("spec.pools", () => {
  it("defaults to none and keeps what an admin declares", () => {
    expect(LeviathPolicySpecSchema.parse({}).pools).toEqual([]);
    expect(LeviathPolicySpecSchema.parse({ pools: [{ agent: "team-a/reviewer", size: 3 }] }).pools).toEqual([{ agent: "team-a/reviewer", size: 3 }]);
  });

  it("refuses a bad entry naming the field", () => {
    expect(issuesOf({ pools: [{ agent: "reviewer", size: 1 }] })).toEqual(["pools.0.agent: must be '<namespace>/<name>' of an Agent (lower-case DNS names)"]);
    expect(issuesOf({ pools: [{ agent: "team-a/reviewer", size: 33 }] })[0]).toMatch(/^pools\.0\.size: /);
    expect(issuesOf({ pools: [{ agent: "team-a/reviewer", size: -1 }] })[0]).toMatch(/^pools\.0\.size: /);
    expect(issuesOf({ pools: [{ agent: "team-a/reviewer" }] })[0]).toMatch(/^pools\.0\.size: /);
    expect(issuesOf({ pools: [{ agent: "team-a/reviewer", size: 1, image: "x" }] })[0]).toMatch(/^pools\.0: Unrecognized key: "image"/);
  });

  it("allows one pool per Agent and at most 32", () => {
    expect(issuesOf({ pools: [{ agent: "team-a/reviewer", size: 1 }, { agent: "team-a/reviewer", size: 2 }] }))
      .toEqual(["pools.1.agent: the Agent 'team-a/reviewer' has a pool already; one pool per Agent"]);
    const many = Array.from({ length: MAX_POOLS + 1 }, (_, i) => ({ agent: `team-a/a${i}`, size: 1 }));
    expect(issuesOf({ pools: many })[0]).toMatch(/^pools: /);
  });
});
