import { describe, expect, it } from "vitest";
import { findFallThroughStage } from "./stage-order.ts";

const stages = [{ name: "a" }, { name: "b", transitions: [] }, { name: "c", transitions: [{ to: "a" }] }, { name: "d" }];

describe("findFallThroughStage", () => {
  it("is the next declared stage only where the stage declares no transitions", () => {
    expect(findFallThroughStage(stages, 0)?.name).toBe("b");
    // Declared transitions, even none, mean no fall-through.
    expect(findFallThroughStage(stages, 1)).toBeUndefined();
    expect(findFallThroughStage(stages, 2)).toBeUndefined();
    expect(findFallThroughStage(stages, 3)).toBeUndefined();
    expect(findFallThroughStage(stages, 7)).toBeUndefined();
  });
});
