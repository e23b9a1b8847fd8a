import { describe, expect, it } from "vitest";
import { LEVELS, compareLevels, formatLevelCapitalised, isLevelAtMost, levelRank, maxLevel, parseLevel } from "./levels.ts";

describe("levels", () => {
  it("ranks public < internal < private", () => {
    expect(LEVELS.map(levelRank)).toEqual([0, 1, 2]);
    expect([...LEVELS].reverse().sort(compareLevels)).toEqual(["public", "internal", "private"]);
  });

  it.each([
    ["public", "internal", "internal"],
    ["private", "public", "private"],
    ["internal", "internal", "internal"],
  ] as const)("max(%s, %s) = %s", (a, b, want) => {
    expect(maxLevel(a, b)).toBe(want);
    expect(maxLevel(b, a)).toBe(want);
  });

  it.each([
    ["public", "public", true],
    ["internal", "public", false],
    ["private", "internal", false],
    ["internal", "private", true],
  ] as const)("%s <= %s is %s", (a, b, want) => {
    expect(isLevelAtMost(a, b)).toBe(want);
  });

  it.each([
    ["public", "public"],
    ["INTERNAL", "internal"],
    ["Private", "private"],
    ["pRiVaTe", "private"],
    ["secret", undefined],
    ["", undefined],
    [" public", undefined],
    ["publ", undefined],
  ] as const)("parses %j as %j", (text, want) => {
    expect(parseLevel(text)).toBe(want);
  });

  it("capitalises for audit JSON and messages", () => {
    expect(LEVELS.map(formatLevelCapitalised)).toEqual(["Public", "Internal", "Private"]);
  });
});
