import { describe, expect, it } from "vitest";
import type { ObservedPoolPod } from "../warm/pool-pod-lookup.ts";
import { computePoolStatuses } from "./pool-status.ts";

const pod = (name: string, state: ObservedPoolPod["state"], deleting = false): ObservedPoolPod => ({ name, state, hash: "h", createdMs: 0, deleting });

describe("computePoolStatuses", () => {
  it("counts each pool's ready and starting unbound pods and what it served, and shows ready/size", () => {
    const pods: Record<string, ObservedPoolPod[]> = {
      "a/one": [pod("p1", "ready"), pod("p2", "starting"), pod("p3", "bound"), pod("p4", "ready", true), pod("p5", "failed")],
      "b/two": [],
    };
    const counts = (p: { agent: string }) => (p.agent === "a/one" ? { adoptions: 4, misses: 2 } : { adoptions: 0, misses: 0 });
    const out = computePoolStatuses([{ agent: "a/one", size: 3 }, { agent: "b/two", size: 1 }], (p) => pods[p.agent] ?? [], counts);
    expect(out.pools).toEqual([
      { agent: "a/one", size: 3, ready: 1, starting: 1, adoptions: 4, misses: 2 },
      { agent: "b/two", size: 1, ready: 0, starting: 0, adoptions: 0, misses: 0 },
    ]);
    expect(out.display).toBe("1/3 0/1");
  });

  it("shows nothing without pools", () => {
    expect(computePoolStatuses([], () => [], () => ({ adoptions: 0, misses: 0 }))).toEqual({ pools: [], display: undefined });
  });
});
