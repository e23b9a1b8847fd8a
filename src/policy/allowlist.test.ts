import { describe, expect, it } from "vitest";
import { findAllowlistMatch, isAllowlistRuleMatch, isTargetPatternMatch, parseAllowlistRule } from "./allowlist.ts";
import type { AllowlistRule } from "./allowlist.ts";

const rule = (r: Partial<AllowlistRule> & { tool: string }): AllowlistRule => ({ to: [], channel: [], maxSensitivity: "private", ...r });

describe("target patterns (the whole language)", () => {
  it.each([
    ["*", "anything", true],
    ["*", "", true],
    ["*.example.com", "api.example.com", true],
    ["*.example.com", "a.b.example.com", true],
    ["*.example.com", "example.com", false],
    ["*.example.com", "evilexample.com", false],
    ["*.example.com", "API.EXAMPLE.COM", false],
    ["*@example.com", "user@example.com", true],
    ["*@example.com", "user@other.com", false],
    ["megan@*", "megan@anywhere.com", true],
    ["megan@*", "bob@anywhere.com", false],
    ["https://hooks.internal/*", "https://hooks.internal/x/y", true],
    ["https://hooks.internal/*", "https://hooks.internal.evil/x", false],
    ["*example*", "my.example*", true],
    ["*example*", "my.example.com", false],
    ["a*b", "a*b", true],
    ["a*b", "axxb", false],
    ["+17576306267", "+17576306267", true],
    ["#team-standup", "#general", false],
    ["", "", true],
    ["", "x", false],
  ])("%j matches %j: %s", (pattern, target, want) => {
    expect(isTargetPatternMatch(pattern, target)).toBe(want);
  });
});

describe("rule matching", () => {
  it("needs the exact tool name: a bash rule never matches shell (G050), nor the reverse", () => {
    expect(isAllowlistRuleMatch(rule({ tool: "bash" }), { tool: "shell", taint: "public" })).toBe(false);
    expect(isAllowlistRuleMatch(rule({ tool: "shell" }), { tool: "bash", taint: "public" })).toBe(false);
    expect(isAllowlistRuleMatch(rule({ tool: "Shell" }), { tool: "shell", taint: "public" })).toBe(false);
    expect(isAllowlistRuleMatch(rule({ tool: "shell" }), { tool: "shell", taint: "public" })).toBe(true);
  });

  it.each([
    ["public", "public", true],
    ["internal", "public", false],
    ["internal", "internal", true],
    ["private", "internal", false],
    ["private", "private", true],
  ] as const)("taint %s under max_sensitivity %s: %s", (taint, max, want) => {
    expect(isAllowlistRuleMatch(rule({ tool: "send_email", maxSensitivity: max }), { tool: "send_email", taint })).toBe(want);
  });

  it("a rule with no patterns matches any target, and none", () => {
    const r = rule({ tool: "post" });
    expect(isAllowlistRuleMatch(r, { tool: "post", taint: "private" })).toBe(true);
    expect(isAllowlistRuleMatch(r, { tool: "post", taint: "private", target: "#x" })).toBe(true);
  });

  it("a target-scoped rule never matches a call with no target", () => {
    expect(isAllowlistRuleMatch(rule({ tool: "send_email", to: ["*"] }), { tool: "send_email", taint: "public" })).toBe(false);
    expect(isAllowlistRuleMatch(rule({ tool: "post", channel: ["*"] }), { tool: "post", taint: "public", target: undefined })).toBe(false);
  });

  it("matches a target against to OR channel", () => {
    const r = rule({ tool: "notify", to: ["megan@*"], channel: ["#team-standup"] });
    expect(isAllowlistRuleMatch(r, { tool: "notify", taint: "internal", target: "megan@work.com" })).toBe(true);
    expect(isAllowlistRuleMatch(r, { tool: "notify", taint: "internal", target: "#team-standup" })).toBe(true);
    expect(isAllowlistRuleMatch(r, { tool: "notify", taint: "internal", target: "#general" })).toBe(false);
  });

  it("returns the first matching rule by position (0-based)", () => {
    const rules = [
      rule({ tool: "send_email", to: ["megan@*"] }),
      rule({ tool: "post_to_slack", maxSensitivity: "internal" }),
      rule({ tool: "post_to_slack" }),
    ];
    expect(findAllowlistMatch(rules, { tool: "send_email", taint: "internal", target: "megan@work.com" })).toBe(0);
    expect(findAllowlistMatch(rules, { tool: "post_to_slack", taint: "internal" })).toBe(1);
    expect(findAllowlistMatch(rules, { tool: "post_to_slack", taint: "private" })).toBe(2);
    expect(findAllowlistMatch(rules, { tool: "unknown", taint: "public" })).toBeUndefined();
    expect(findAllowlistMatch([], { tool: "x", taint: "public" })).toBeUndefined();
  });
});

describe("parseAllowlistRule defaults", () => {
  it("missing fields default to empty and public", () => {
    expect(parseAllowlistRule({})).toEqual({ tool: "", to: [], channel: [], maxSensitivity: "public" });
  });

  it("max_sensitivity is case-insensitive; an unreadable value is public", () => {
    expect(parseAllowlistRule({ tool: "t", max_sensitivity: "Private" }).maxSensitivity).toBe("private");
    expect(parseAllowlistRule({ tool: "t", max_sensitivity: "secret" }).maxSensitivity).toBe("public");
  });
});

describe("a call with several targets", () => {
  const r = rule({ tool: "mail__send", to: ["*@corp.example", "partner@client.example"] });

  it("is allowed only when every target matches a pattern", () => {
    expect(isAllowlistRuleMatch(r, { tool: "mail__send", taint: "private", targets: ["a@corp.example", "partner@client.example"] })).toBe(true);
    expect(isAllowlistRuleMatch(r, { tool: "mail__send", taint: "private", targets: ["a@corp.example", "mark@evil.example"] })).toBe(false);
  });

  it("with no target at all never matches a rule with patterns", () => {
    expect(isAllowlistRuleMatch(r, { tool: "mail__send", taint: "private", targets: [] })).toBe(false);
  });

  it("the list wins over a single target when both are given", () => {
    expect(isAllowlistRuleMatch(r, { tool: "mail__send", taint: "private", target: "a@corp.example", targets: ["a@corp.example", "x@evil.example"] })).toBe(false);
  });
});

