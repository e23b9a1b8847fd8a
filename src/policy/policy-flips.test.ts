import { describe, expect, it } from "vitest";
import type { ToolCallDecision } from "./decide-tool-call.ts";
import { classifyVerdict, decideWouldFlip, describeVerdictBasis, formatWouldFlip, pickStricter, type PolicyVerdict } from "./policy-flips.ts";

const run = (permission: "allow" | "ask" = "allow"): PolicyVerdict => ({ kind: "run", permission: { permission, source: "ceiling" }, gate: undefined, events: [], source: "taint_disabled", paths: undefined }) as ToolCallDecision;
const ruleRun: PolicyVerdict = { kind: "run", permission: undefined, gate: { kind: "run", verdict: { kind: "rule", name: "docs-only" } }, events: [], source: "scripted_rule", paths: undefined } as unknown as ToolCallDecision;
const refuse: PolicyVerdict = { kind: "refuse", reason: "permission-denied", message: "no", permission: { permission: "deny", source: "ceiling" }, gate: undefined, events: [] };
const blocked: PolicyVerdict = { kind: "refuse", reason: "gate-blocked", message: "no", permission: undefined, gate: { kind: "block" }, events: [] } as unknown as ToolCallDecision;
const ask: PolicyVerdict = { kind: "ask-permission", permission: { permission: "ask", source: "blueprint" }, prompt: {}, events: [] } as unknown as ToolCallDecision;
const unavailable: PolicyVerdict = { kind: "unavailable" };

describe("classifyVerdict", () => {
  it.each([
    ["a run", run(), "allow"],
    ["a refusal", refuse, "deny"],
    ["a tool the stage does not offer", unavailable, "deny"],
    ["a permission prompt", ask, "ask"],
  ] as const)("%s is %s", (_, v, cls) => {
    expect(classifyVerdict(v)).toBe(cls);
  });
});

describe("pickStricter (the pinned policy and the generation in force)", () => {
  it.each([
    ["allow, allow", run(), run(), "pinned"],
    ["allow, deny", run(), refuse, "in-force"],
    ["allow, ask", run(), ask, "in-force"],
    ["ask, allow (a later generation never loosens)", ask, run(), "pinned"],
    ["deny, allow", refuse, run(), "pinned"],
    ["deny, deny (a tie keeps the pinned one)", refuse, blocked, "pinned"],
    ["ask, unavailable", ask, unavailable, "in-force"],
  ] as const)("%s -> %s", (_, pinned, inForce, from) => {
    const picked = pickStricter(pinned, inForce);
    expect(picked.from).toBe(from);
    expect(picked.verdict).toBe(from === "pinned" ? pinned : inForce);
  });
});

describe("decideWouldFlip", () => {
  it("is none when both give the same outcome, even for different reasons", () => {
    expect(decideWouldFlip({ tool: "read_file" }, refuse, blocked)).toBeUndefined();
    expect(decideWouldFlip({ tool: "read_file" }, run(), ruleRun)).toBeUndefined();
  });

  it.each([
    [run(), refuse, "allow", "deny", "permission allow (ceiling), taint_disabled -> permission-denied"],
    [run(), ask, "allow", "ask", "permission allow (ceiling), taint_disabled -> permission ask (blueprint)"],
    [refuse, ruleRun, "deny", "allow", "permission-denied -> rule 'docs-only'"],
    [ask, blocked, "ask", "deny", "permission ask (blueprint) -> gate-blocked (taint gate)"],
    [run(), unavailable, "allow", "deny", "permission allow (ceiling), taint_disabled -> tool not offered by the stage"],
  ] as const)("names the outcomes and what each rests on (%#)", (now, candidate, a, b, differs) => {
    expect(decideWouldFlip({ tool: "http_get", target: "example.com" }, now, candidate)).toEqual({ tool: "http_get", target: "example.com", now: a, candidate: b, differs });
  });

  it("formats a flip in one line, cut at 1024 characters", () => {
    const flip = decideWouldFlip({ tool: "shell" }, run(), refuse)!;
    expect(formatWouldFlip(flip)).toBe("shell: allow -> deny (permission allow (ceiling), taint_disabled -> permission-denied)");
    expect(formatWouldFlip({ ...flip, differs: "x".repeat(2000) })).toHaveLength(1024);
    expect(describeVerdictBasis(unavailable)).toBe("tool not offered by the stage");
  });
});
