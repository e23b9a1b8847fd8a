import { describe, expect, it } from "vitest";
import { describeMissingResult } from "./run-state.ts";

describe("kubectl leviath result without a result", () => {
  it("says a Run still on its way has none yet", () => {
    expect(describeMissingResult("r", undefined, undefined)).toBe("run 'r' has no result yet (phase Pending)");
    expect(describeMissingResult("r", "Running", "working")).toBe("run 'r' has no result yet (phase Running)");
  });

  it("says a Run that ended without one will never have one, and why", () => {
    expect(describeMissingResult("r", "Failed", "the sandbox pod was evicted")).toBe("run 'r' ended Failed without a result: the sandbox pod was evicted");
    expect(describeMissingResult("r", "Cancelled", undefined)).toBe("run 'r' ended Cancelled without a result");
  });
});
