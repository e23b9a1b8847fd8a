// Sensitivity levels (taint-gate spec §1.1): three totally ordered words, lower case in files and CLI
// output, capitalised in audit JSON and in the gate's block and prompt texts.

/** A sensitivity level, lower case as written in config files and CLI flags. */
export type Level = "public" | "internal" | "private";

/** The capitalised spelling used by the audit record and the gate's messages. */
export type CapitalisedLevel = "Public" | "Internal" | "Private";

/** Every level, least sensitive first. */
export const LEVELS: readonly Level[] = ["public", "internal", "private"];

const RANK: Readonly<Record<Level, number>> = { public: 0, internal: 1, private: 2 };

const CAPITALISED: Readonly<Record<Level, CapitalisedLevel>> = {
  public: "Public",
  internal: "Internal",
  private: "Private",
};

/** The numeric rank of a level: public 0, internal 1, private 2. */
export function levelRank(level: Level): number {
  return RANK[level];
}

/** The more sensitive of two levels. */
export function maxLevel(a: Level, b: Level): Level {
  return RANK[a] >= RANK[b] ? a : b;
}

/** Negative, zero or positive as `a` is below, equal to or above `b` (usable with `Array.sort`). */
export function compareLevels(a: Level, b: Level): number {
  return RANK[a] - RANK[b];
}

/** True when `a <= b` by rank (the clearance and `max_sensitivity` checks). */
export function isLevelAtMost(a: Level, b: Level): boolean {
  return RANK[a] <= RANK[b];
}

/** Parses a level case-insensitively; anything but the three words is undefined (each caller decides). */
export function parseLevel(text: string): Level | undefined {
  const lower = text.toLowerCase();
  return lower === "public" || lower === "internal" || lower === "private" ? lower : undefined;
}

/** The capitalised spelling (`Public`, `Internal`, `Private`) for audit JSON and gate messages. */
export function formatLevelCapitalised(level: Level): CapitalisedLevel {
  return CAPITALISED[level];
}
