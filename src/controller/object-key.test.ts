import { describe, expect, it } from "vitest";
import { buildObjectKey, buildObjectKeyOf, parseObjectKey } from "./object-key.ts";

describe("object keys", () => {
  it("round-trips a namespaced key", () => {
    expect(buildObjectKey("team-a", "run-1")).toBe("team-a/run-1");
    expect(parseObjectKey("team-a/run-1")).toEqual({ namespace: "team-a", name: "run-1" });
  });

  it("writes a cluster-scoped object's key as its bare name", () => {
    expect(buildObjectKeyOf({ metadata: { name: "cluster" } })).toBe("cluster");
    expect(parseObjectKey("cluster")).toEqual({ namespace: undefined, name: "cluster" });
  });
});
