import { describe, expect, it } from "vitest";
import { ContextTaint } from "./context-taint.ts";

describe("ContextTaint", () => {
  it("is public with no labelled entries", () => {
    const ctx = new ContextTaint();
    expect(ctx.level()).toBe("public");
    expect(ctx.regionLevel("conversation")).toBe("public");
    expect(ctx.sourceRegions("public")).toEqual([]);
  });

  it("is the max over live entries across regions", () => {
    const ctx = new ContextTaint();
    ctx.label("conversation", "r1", "internal");
    ctx.label("notes", "n1", "public");
    expect(ctx.level()).toBe("internal");
    ctx.label("research", "x1", "private");
    expect(ctx.level()).toBe("private");
    expect(ctx.regionLevel("notes")).toBe("public");
  });

  it("eviction lowers taint", () => {
    const ctx = new ContextTaint();
    ctx.label("conversation", "r1", "private");
    ctx.label("conversation", "r2", "internal");
    expect(ctx.evict("conversation", "r1")).toBe(true);
    expect(ctx.level()).toBe("internal");
    ctx.evict("conversation", "r2");
    expect(ctx.level()).toBe("public");
    expect(ctx.evict("conversation", "r2")).toBe(false);
  });

  it("evicts by identity: removing an earlier unrelated entry never drops a later private label (H1)", () => {
    const ctx = new ContextTaint();
    ctx.label("conversation", "task", "public");
    ctx.label("conversation", "secret-read", "private");
    ctx.evict("conversation", "task");
    expect(ctx.level()).toBe("private");
    expect(ctx.labelOf("conversation", "secret-read")).toBe("private");
  });

  it("copy-then-delete cannot launder (H2)", () => {
    const ctx = new ContextTaint();
    ctx.label("conversation", "read-1", "private");
    // the model copies what it read into a scratch region, then deletes the original
    expect(ctx.labelModelWrite("scratch", "copy")).toBe("private");
    ctx.evict("conversation", "read-1");
    expect(ctx.level()).toBe("private");
    expect(ctx.sourceRegions("public")).toEqual(["scratch"]);
    // only dropping the copy too brings it down
    ctx.evict("scratch", "copy");
    expect(ctx.level()).toBe("public");
  });

  it("a model write in a public context is public", () => {
    const ctx = new ContextTaint();
    expect(ctx.labelModelWrite("conversation", "turn-1")).toBe("public");
    expect(ctx.level()).toBe("public");
  });

  it("relabelling an entry keeps the higher label: only an eviction lowers it", () => {
    const ctx = new ContextTaint();
    ctx.label("todo", "k", "internal");
    expect(ctx.label("todo", "k", "public")).toBe("internal");
    expect(ctx.label("todo", "k", "private")).toBe("private");
    expect(ctx.labelModelWrite("todo", "k")).toBe("private");
    expect(ctx.entries()).toEqual([{ region: "todo", entryId: "k", level: "private" }]);
    ctx.evict("todo", "k");
    expect(ctx.label("todo", "k", "public")).toBe("public");
  });

  it("clearing a region removes all its labels", () => {
    const ctx = new ContextTaint();
    ctx.label("research", "a", "private");
    ctx.label("research", "b", "internal");
    ctx.label("conversation", "c", "internal");
    ctx.clearRegion("research");
    expect(ctx.level()).toBe("internal");
  });

  it("source regions are those strictly above the clearance, in window order", () => {
    const ctx = new ContextTaint();
    ctx.label("research", "a", "private");
    ctx.label("conversation", "b", "internal");
    ctx.label("notes", "c", "public");
    expect(ctx.sourceRegions("public")).toEqual(["research", "conversation"]);
    expect(ctx.sourceRegions("public", ["conversation", "notes", "research", "conversation"])).toEqual(["conversation", "research"]);
    expect(ctx.sourceRegions("internal")).toEqual(["research"]);
    expect(ctx.sourceRegions("private")).toEqual([]);
  });

  it("restores from persisted entries", () => {
    const ctx = new ContextTaint();
    ctx.label("research", "a", "private");
    ctx.label("conversation", "b", "internal");
    const restored = new ContextTaint(ctx.entries());
    expect(restored.level()).toBe("private");
    restored.evict("research", "a");
    expect(restored.level()).toBe("internal");
  });
});
