import { describe, expect, it } from "vitest";
import { uniqueName } from "./create-restricted-namespace.ts";
import { findCondition, waitFor } from "./wait-for.ts";

describe("waitFor", () => {
  it("returns the first value that is not undefined, null or false, retrying through errors", async () => {
    let calls = 0;
    const value = await waitFor(() => {
      calls += 1;
      if (calls === 1) throw new Error("not yet");
      return calls < 3 ? false : { calls };
    }, { intervalMs: 1 });
    expect(value).toEqual({ calls: 3 });
  });

  it("times out naming what it waited for and the last error", async () => {
    const failure = waitFor(() => {
      throw new Error("still broken");
    }, { timeoutMs: 30, intervalMs: 5, description: "the thing" });
    await expect(failure).rejects.toThrow(/timed out after 30 ms waiting for the thing; last error: still broken/);
  });
});

describe("findCondition", () => {
  it("finds a condition by type", () => {
    const obj = { status: { conditions: [{ type: "Ready", status: "False" }, { type: "Established", status: "True" }] } };
    expect(findCondition(obj, "Established")?.status).toBe("True");
    expect(findCondition(obj, "Missing")).toBeUndefined();
    expect(findCondition({}, "Ready")).toBeUndefined();
  });
});

describe("uniqueName", () => {
  it("makes distinct DNS-1123 labels from any prefix", () => {
    const a = uniqueName("Smoke Test_");
    expect(a).toMatch(/^smoke-test-[0-9a-f]{8}$/);
    expect(uniqueName("smoke")).not.toBe(uniqueName("smoke"));
    expect(uniqueName("x".repeat(100)).length).toBeLessThanOrEqual(63);
  });
});
