import { describe, expect, it } from "vitest";
import type { RunPolicy } from "../../api/run-policy.ts";
import type { ToolCallDecision } from "../../policy/decide-tool-call.ts";
import type { PolicyVerdict, WouldFlip } from "../../policy/policy-flips.ts";
import type { Enforcement } from "./enforcement.ts";
import { PolicyRollout, type RolloutEntry } from "./policy-rollout.ts";
import { createHash } from "node:crypto";
import { AgentSpecSchema } from "../../api/agent.ts";
import { LeviathPolicySpecSchema } from "../../api/leviath-policy.ts";
import { buildRunPolicy } from "../../policy/run-policy-merge.ts";

// A compiled policy stands for the verdict every call gets under it: its read_file ceiling (allow when it has none).
const allow: PolicyVerdict = { kind: "run", permission: { permission: "allow", source: "default" }, gate: undefined, events: [], source: "taint_disabled", paths: undefined } as ToolCallDecision;
const deny: PolicyVerdict = { kind: "refuse", reason: "permission-denied", message: "no", permission: { permission: "deny", source: "ceiling" }, gate: undefined, events: [] };
const ask: PolicyVerdict = { kind: "ask-permission", permission: { permission: "ask", source: "ceiling" }, prompt: {}, events: [] } as unknown as ToolCallDecision;
const VERDICTS: Record<string, PolicyVerdict> = { allow, deny, ask };
const AGENT = AgentSpecSchema.parse({ agent: { name: "a" }, stages: [{ name: "main" }] });
/** The run policy text of a snapshot whose every call gets `verdict`. */
const text = (verdict: "allow" | "ask" | "deny") => JSON.stringify(buildRunPolicy(AGENT, { key: "ns/a", name: "a" }, LeviathPolicySpecSchema.parse({ toolPermissions: { read_file: verdict } }), { mode: "headless" }));
const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const offer = (verdict: "allow" | "ask" | "deny", generation: number, enforcement?: "warn" | "audit") => ({ generation, sha256: sha(text(verdict) + String(enforcement)), text: text(verdict), ...(enforcement ? { enforcement } : {}) });

function setup() {
  const events: { changed: string[]; failed: string[]; flips: { flip: WouldFlip; mode: string | undefined; id: string }[] } = { changed: [], failed: [], flips: [] };
  const rollout = new PolicyRollout((rp: RunPolicy) => ({ ok: true, value: { verdict: rp.toolPermissions.ceiling["read_file"] ?? "allow" } as unknown as Enforcement }), {
    changed: (role, entry) => events.changed.push(`${role}:${entry?.generation ?? "withdrawn"}`),
    failed: (role, error) => events.failed.push(`${role}: ${error}`),
    flipped: (flip, candidate: RolloutEntry, id) => events.flips.push({ flip, mode: candidate.enforcement, id }),
  });
  const under = (enf: Enforcement) => VERDICTS[(enf as unknown as { verdict: string }).verdict]!;
  const pinned = (verdict: PolicyVerdict) => ({ verdict, enf: { verdict: "pinned" } as unknown as Enforcement });
  return { rollout, events, under, pinned };
}

describe("PolicyRollout: the dual decision", () => {
  it("follows the pinned verdict with no rollout, and records nothing", () => {
    const { rollout, events, under, pinned } = setup();
    expect(rollout.decide({ id: "c1", tool: "read_file" }, pinned(allow), under).verdict).toBe(allow);
    expect(events.flips).toEqual([]);
    expect(rollout.tally()).toBeUndefined();
  });

  it.each([
    ["allow", allow, "deny", deny],
    ["allow", allow, "ask", ask],
    ["ask", ask, "deny", deny],
    ["deny", deny, "allow", deny],
    ["ask", ask, "allow", ask],
  ] as const)("pinned %s, in force %s: the stricter is enforced", (_, pinnedVerdict, inForce, expected) => {
    const { rollout, under, pinned } = setup();
    expect(rollout.offer("enforced", offer(inForce, 5))).toBe("applied");
    expect(rollout.decide({ id: "c", tool: "read_file" }, pinned(pinnedVerdict), under).verdict).toBe(expected);
  });

  it.each([
    ["warn", allow, "deny", { now: "allow", candidate: "deny" }],
    ["audit", allow, "ask", { now: "allow", candidate: "ask" }],
    ["warn", ask, "deny", { now: "ask", candidate: "deny" }],
    ["warn", deny, "allow", undefined],
    ["audit", allow, "allow", undefined],
  ] as const)("a %s candidate never changes the verdict; a different outcome is one would-flip (%#)", (mode, now, candidate, flip) => {
    const { rollout, events, under, pinned } = setup();
    rollout.offer("candidate", offer(candidate, 7, mode));
    const call = { id: "c", tool: "read_file", target: "notes.md" };
    expect(rollout.decide(call, pinned(now), under).verdict).toBe(now);
    expect(events.flips.map((f) => ({ now: f.flip.now, candidate: f.flip.candidate }))).toEqual(flip ? [flip] : []);
    if (flip) expect(events.flips[0]).toMatchObject({ mode, id: "c", flip: { tool: "read_file", target: "notes.md" } });
  });

  it("compares a call once: deciding it again after its prompt is no second flip", () => {
    const { rollout, events, under, pinned } = setup();
    rollout.offer("candidate", offer("deny", 7, "warn"));
    const call = { id: "c", tool: "read_file" };
    rollout.decide(call, pinned(ask), under);
    rollout.decide(call, pinned(allow), under);
    expect(events.flips).toHaveLength(1);
  });

  it("compares against what the Run enforces: the stricter of pinned and in force", () => {
    const { rollout, events, under, pinned } = setup();
    rollout.offer("enforced", offer("deny", 6));
    rollout.offer("candidate", offer("deny", 7, "warn"));
    expect(rollout.decide({ id: "c", tool: "read_file" }, pinned(allow), under).verdict).toBe(deny);
    expect(events.flips).toEqual([]);
  });

  it("counts warn flips per candidate generation on the tally, audit ones not", () => {
    const { rollout, under, pinned } = setup();
    rollout.offer("candidate", offer("deny", 7, "audit"));
    rollout.decide({ id: "a1", tool: "read_file" }, pinned(allow), under);
    expect(rollout.tally()).toBeUndefined();
    rollout.offer("candidate", offer("deny", 8, "warn"));
    rollout.decide({ id: "w1", tool: "read_file" }, pinned(allow), under);
    rollout.decide({ id: "w2", tool: "read_file" }, pinned(allow), under);
    expect(rollout.tally()).toEqual({ generation: 8, count: 2, last: "read_file: allow -> deny (permission allow (default), taint_disabled -> permission-denied)" });
    rollout.offer("candidate", offer("ask", 9, "warn"));
    rollout.decide({ id: "w3", tool: "read_file" }, pinned(allow), under);
    expect(rollout.tally()).toMatchObject({ generation: 9, count: 1 });
  });
});

describe("PolicyRollout: snapshots (fail closed)", () => {
  it("keeps the snapshot before when one does not parse, and reports it", () => {
    const { rollout, events, under, pinned } = setup();
    rollout.offer("enforced", offer("deny", 6));
    expect(rollout.offer("enforced", { generation: 7, sha256: "f".repeat(64), text: "{ not json" })).toBe("failed");
    expect(events.failed[0]).toMatch(/^enforced: run-policy\.json: not JSON/);
    expect(rollout.entry("enforced")?.generation).toBe(6);
    expect(rollout.decide({ id: "c", tool: "read_file" }, pinned(allow), under).verdict).toBe(deny);
    expect(rollout.offer("candidate", { generation: 8, sha256: "e".repeat(64), text: "{}", enforcement: "warn" })).toBe("failed");
    expect(rollout.entry("candidate")).toBeUndefined();
  });

  it("moves the generation in force only forward, and never withdraws it", () => {
    const { rollout, events } = setup();
    rollout.offer("enforced", offer("deny", 6));
    expect(rollout.offer("enforced", offer("allow", 5))).toBe("unchanged");
    expect(rollout.entry("enforced")?.generation).toBe(6);
    rollout.withdrawCandidate();
    expect(rollout.entry("enforced")?.generation).toBe(6);
    expect(events.changed).toEqual(["enforced:6"]);
  });

  it("withdraws the candidate, and the same bytes offered again change nothing", () => {
    const { rollout, events } = setup();
    expect(rollout.offer("candidate", offer("deny", 7, "warn"))).toBe("applied");
    expect(rollout.offer("candidate", offer("deny", 7, "warn"))).toBe("unchanged");
    rollout.withdrawCandidate();
    expect(rollout.entry("candidate")).toBeUndefined();
    expect(events.changed).toEqual(["candidate:7", "candidate:withdrawn"]);
  });
});
