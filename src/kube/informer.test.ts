import { describe, expect, it } from "vitest";
import { stripManagedFields } from "./informer.ts";

describe("stripManagedFields", () => {
  it("drops managedFields and keeps the rest of the object", () => {
    const obj = { metadata: { name: "a", labels: { x: "y" }, managedFields: [{ manager: "leviath-operator" }] }, spec: { n: 1 } };
    expect(stripManagedFields(obj)).toEqual({ metadata: { name: "a", labels: { x: "y" } }, spec: { n: 1 } });
  });

  it("leaves objects without metadata or managedFields as they are", () => {
    expect(stripManagedFields({ kind: "Status", code: 410 })).toEqual({ kind: "Status", code: 410 });
    expect(stripManagedFields(undefined)).toBeUndefined();
  });
});
