import { describe, expect, it } from "vitest";
import { isApplied } from "./applied.ts";

describe("isApplied", () => {
  it.each([
    ["equal scalars", { a: 1 }, { a: 1 }, true],
    ["a server default beside our fields", { spec: { accessModes: ["ReadWriteOnce"] } }, { spec: { accessModes: ["ReadWriteOnce"], volumeMode: "Filesystem" } }, true],
    ["a changed value", { a: 1 }, { a: 2 }, false],
    ["a missing field", { a: { b: 1 } }, { a: {} }, false],
    ["an extra list item (a broadened Role)", { rules: [{ verbs: ["get"] }] }, { rules: [{ verbs: ["get"] }, { verbs: ["*"] }] }, false],
    ["list items in another order", { l: [1, 2] }, { l: [2, 1] }, false],
    ["a defaulted field inside a list item", { subjects: [{ kind: "ServiceAccount" }] }, { subjects: [{ kind: "ServiceAccount", apiGroup: "" }] }, true],
    ["an object where a scalar was", { a: { b: 1 } }, { a: "x" }, false],
  ])("%s", (_n, desired, live, expected) => {
    expect(isApplied(desired, live)).toBe(expected);
  });
});
