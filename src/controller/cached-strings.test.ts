import { describe, expect, it } from "vitest";
import { createStringPool } from "./cached-strings.ts";

// Strings as JSON.parse makes them: equal values, distinct copies (a template literal builds each one anew).
const fresh = (text: string) => `${text.slice(0, 1)}${text.slice(1)}`;
const event = (name: string) => JSON.parse(JSON.stringify({
  apiVersion: "leviath.dev/v1alpha1", kind: "Run",
  metadata: { name, labels: { "app.kubernetes.io/managed-by": "leviath-operator" }, ownerReferences: [{ name: "owner", uid: "u-1" }] },
  status: { conditions: [{ type: "Ready", message: fresh("waiting for the sandbox pods to be Ready"), count: 2, ok: true, none: null }] },
})) as Record<string, unknown>;

describe("createStringPool", () => {
  it("leaves every value as it was", () => {
    const share = createStringPool();
    const before = event("a");
    expect(share(event("a"))).toEqual(before);
    expect(share("text")).toBe("text");
    expect(share(3)).toBe(3);
    expect(share(null)).toBeNull();
  });

  it("keeps one copy of each string across objects and drops none", () => {
    const share = createStringPool();
    share(event("a"));
    const size = share.size;
    share(event("b"));
    // The second object adds only its name: everything else it holds is already in the pool.
    expect(share.size).toBe(size + 1);
  });

  it("starts over when full and passes long strings through without keeping them", () => {
    const share = createStringPool(3, 10);
    for (const s of ["a", "b", "c"]) share(s);
    expect(share.size).toBe(3);
    share("d");
    expect(share.size).toBe(1);
    share("x".repeat(11));
    expect(share.size).toBe(1);
  });
});
