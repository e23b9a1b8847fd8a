import { describe, expect, it } from "vitest";
import { elideMiddle, formatAge, formatTable, parseDuration, truncateText } from "./table.ts";

describe("plugin output", () => {
  it("pads columns as kubectl get does, without trailing spaces", () => {
    expect(formatTable(["A", "LONGER"], [["xyz", "1"], ["q", ""]])).toBe("A     LONGER\nxyz   1\nq\n");
  });

  it("words ages as kubectl does", () => {
    const now = Date.parse("2026-01-02T00:00:00Z");
    expect(formatAge("2026-01-01T23:59:15Z", now)).toBe("45s");
    expect(formatAge("2026-01-01T23:50:00Z", now)).toBe("10m");
    expect(formatAge("2026-01-01T18:00:00Z", now)).toBe("6h");
    expect(formatAge("2025-12-28T00:00:00Z", now)).toBe("5d");
    expect(formatAge(undefined, now)).toBe("<unknown>");
  });

  it("cuts prompts to one line", () => {
    expect(truncateText("run\n  `ls docs/`\tnow", 100)).toBe("run `ls docs/` now");
    expect(truncateText("abcdefgh", 5)).toBe("abcd…");
  });

  it("keeps both ends of a long prompt, its question included", () => {
    const gate = "Tool 'http_post' would send Private-level data over a channel cleared only for Public. Allow it?";
    expect(elideMiddle(gate, 120)).toBe(gate);
    const cut = elideMiddle(`Tool 'x' ${"y".repeat(200)} Allow it?`, 60);
    expect(cut.length).toBe(60);
    expect(cut.startsWith("Tool 'x' yyy")).toBe(true);
    expect(cut.endsWith("yyy Allow it?")).toBe(true);
    expect(cut).toContain("…");
    expect(elideMiddle("a\n  b", 10)).toBe("a b");
  });

  it("reads durations, and nothing else", () => {
    expect(parseDuration("30s")).toBe(30_000);
    expect(parseDuration("2m")).toBe(120_000);
    expect(parseDuration("1h")).toBe(3_600_000);
    expect(parseDuration("15")).toBe(15_000);
    expect(parseDuration("1.5s")).toBe(1500);
    for (const bad of ["", "s", "-1s", "5d", "1m30s"]) expect(parseDuration(bad)).toBeUndefined();
  });
});
