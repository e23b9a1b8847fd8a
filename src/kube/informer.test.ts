import { describe, expect, it } from "vitest";
import { LAST_APPLIED_ANNOTATION, stripLastApplied, stripManagedFields } from "./informer.ts";

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

describe("stripLastApplied", () => {
  it("drops kubectl's copy of the object and keeps every other annotation", () => {
    const obj = { metadata: { name: "a", annotations: { [LAST_APPLIED_ANNOTATION]: "{\"kind\":\"Run\"}", "leviath.dev/resume": "1" } }, spec: { n: 1 } };
    expect(stripLastApplied(obj)).toEqual({ metadata: { name: "a", annotations: { "leviath.dev/resume": "1" } }, spec: { n: 1 } });
    expect(stripLastApplied({ metadata: { name: "b" } })).toEqual({ metadata: { name: "b" } });
    expect(stripLastApplied(undefined)).toBeUndefined();
  });
});
