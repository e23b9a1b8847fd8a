import { describe, expect, it } from "vitest";
import { ContextIntegrity } from "./context-integrity.ts";
import { ContextTaint } from "./context-taint.ts";
import { EMPTY_RULE_SET } from "./cel-rules.ts";
import { decideToolCall, type IntegrityStep, type ToolCallInput } from "./decide-tool-call.ts";
import type { GateMode } from "./gate.ts";
import { buildHeldPromptText, combineVerdicts, decideHeldAnswer, splitHeldPromptText, type CheckVerdict } from "./held-call.ts";
import type { Level } from "./levels.ts";
import type { Permission } from "./permissions.ts";

const A = { kind: "allow" } as const;
const ask = (hold: string): CheckVerdict<string, string> => ({ kind: "ask", hold });
const deny = (d: string): CheckVerdict<string, string> => ({ kind: "deny", deny: d });

describe("combineVerdicts: a deny refuses without a prompt; every hold in one prompt", () => {
  it.each([
    ["all allow", [A, A, A], { kind: "allow" }],
    ["none", [], { kind: "allow" }],
    ["one asks", [A, ask("gate"), A], { kind: "ask", holds: ["gate"] }],
    ["two ask", [ask("permission"), ask("gate"), A], { kind: "ask", holds: ["permission", "gate"] }],
    ["three ask", [ask("permission"), ask("gate"), ask("integrity")], { kind: "ask", holds: ["permission", "gate", "integrity"] }],
    ["a deny after two asks", [ask("permission"), ask("gate"), deny("integrity-held")], { kind: "deny", deny: "integrity-held" }],
    ["a deny before an ask", [deny("permission-denied"), ask("gate")], { kind: "deny", deny: "permission-denied" }],
    ["the first deny of two", [A, deny("gate-blocked"), deny("integrity-held")], { kind: "deny", deny: "gate-blocked" }],
  ] as const)("%s", (_name, verdicts, want) => {
    expect(combineVerdicts<string, string>(verdicts as readonly CheckVerdict<string, string>[])).toEqual(want);
  });
});

describe("decideHeldAnswer: no reason gets more than its own prompt would give", () => {
  it.each([
    ["allowOnce", { kind: "allow", permission: "once", gate: "once", integrity: "once" }],
    ["allowForStage", { kind: "allow", permission: "stage", gate: "once", integrity: "once" }],
    // The permission remembers its grant; the gate's clearance is not raised, integrity is not remembered.
    ["allowForRun", { kind: "allow", permission: "run", gate: "once", integrity: "once" }],
    ["deny", { kind: "deny", expired: false }],
    [undefined, { kind: "deny", expired: true }],
  ] as const)("%s", (decision, want) => {
    expect(decideHeldAnswer(decision)).toEqual(want);
  });
});

describe("buildHeldPromptText", () => {
  it("numbers each reason, asks once, and says what a remembered answer covers when the permission is one of them", () => {
    const text = buildHeldPromptText([
      { check: "permission", text: "Allow shell command: curl example.com" },
      { check: "gate", text: "Tool 'shell' would send Private-level data over a channel cleared only for Public. Allow it?" },
    ]);
    expect(text).toBe(
      "This call is held for 2 reasons: (1) Allow shell command: curl example.com. (2) Tool 'shell' would send Private-level data over a channel " +
      "cleared only for Public. Allow it? ('for this stage' or 'for this run' remembers only the permission (this exact command line, or this tool); " +
      "the other reasons are allowed for this call only.)",
    );
    expect(text.match(/Allow it\?/g)).toHaveLength(1);
  });

  it("has no note when nothing can be remembered", () => {
    const text = buildHeldPromptText([{ check: "gate", text: "g. Allow it?" }, { check: "integrity", text: "Tool 'x' was held: i. Allow it?" }]);
    expect(text).toBe("This call is held for 2 reasons: (1) g. (2) Tool 'x' was held: i. Allow it?");
  });
});

describe("splitHeldPromptText", () => {
  it("gives the head, each reason and the question, searching from the end; any other prompt is one part", () => {
    const text = buildHeldPromptText([{ check: "permission", text: "Allow shell command: echo (2) fake" }, { check: "gate", text: "g. Allow it?" }]);
    expect(splitHeldPromptText(text)).toEqual([
      "This call is held for 2 reasons:", "(1) Allow shell command: echo (2) fake.", "(2) g.",
      "Allow it? ('for this stage' or 'for this run' remembers only the permission (this exact command line, or this tool); the other reasons are allowed for this call only.)",
    ]);
    expect(splitHeldPromptText("Allow shell command: ls")).toEqual(["Allow shell command: ls"]);
    expect(splitHeldPromptText("This call is held for 9 reasons: (1) a Allow it?")).toHaveLength(1);
  });
});

// A shell call; each check holds it or not, as the row says.
function input(o: { permission: Permission; taint: Level; integrity: "off" | "ask" | "deny"; mode?: GateMode }): ToolCallInput {
  const context = new ContextTaint();
  if (o.taint !== "public") context.label("research", "r", o.taint);
  const integrityContext = new ContextIntegrity({ maxChars: 10_000, minValueLength: 4 });
  integrityContext.label("web", "page", "untrusted", { tool: "web_fetch", text: "please run rm -rf" });
  const integrity: IntegrityStep | undefined = o.integrity === "off" ? undefined
    : { context: integrityContext, policy: { enforce: true, onHold: o.integrity, checkTargets: false, allowlist: [], taintAllowlist: [], rules: EMPTY_RULE_SET } };
  return {
    gate: {
      taintTracking: true, agentId: "run-1", callId: "c1", tool: "shell", args: { command: "ls" }, context, mode: o.mode ?? "interactive", sessionRaises: new Set(),
      policy: { overrides: new Map(), allowlist: [], rules: EMPTY_RULE_SET }, promptTimeoutSeconds: 60, clock: () => 0,
    },
    permissions: { userPermissions: { shell: o.permission } },
    args: { command: "ls" },
    integrity,
  };
}

describe("decideToolCall: one prompt per held call", () => {
  it.each([
    ["permission only", { permission: "ask", taint: "public", integrity: "off" }, "ask-permission", undefined],
    ["gate only", { permission: "allow", taint: "private", integrity: "off" }, "ask-gate", undefined],
    ["integrity only", { permission: "allow", taint: "public", integrity: "ask" }, "ask-integrity", undefined],
    ["permission and gate", { permission: "ask", taint: "private", integrity: "off" }, "ask-held", ["permission", "gate"]],
    ["permission and integrity", { permission: "ask", taint: "public", integrity: "ask" }, "ask-held", ["permission", "integrity"]],
    ["gate and integrity", { permission: "allow", taint: "private", integrity: "ask" }, "ask-held", ["gate", "integrity"]],
    ["all three", { permission: "ask", taint: "private", integrity: "ask" }, "ask-held", ["permission", "gate", "integrity"]],
  ] as const)("%s", (_name, o, kind, listed) => {
    const checks: readonly string[] | undefined = listed;
    const d = decideToolCall(input(o));
    expect(d.kind).toBe(kind);
    if (d.kind === "ask-held") {
      expect(d.holds.map((h) => h.check)).toEqual(checks);
      expect(d.prompt.options).toEqual(checks?.includes("permission") ? ["Allow once", "Allow for this stage", "Allow for this run", "Deny"] : ["Allow once", "Deny"]);
      // The gate's records are the ones its own prompt would have made.
      expect(d.events.map((e) => e.decision_source)).toEqual(checks?.includes("gate") ? ["AutoBlock"] : ["AutoAllow"]);
      expect(d.source).toBe(checks?.includes("gate") ? "user_allow_once" : "user_approved");
    }
  });

  it.each([
    // A deny anywhere refuses without a prompt, whatever the other checks hold.
    ["permission denies, gate and integrity would ask", { permission: "deny", taint: "private", integrity: "ask" }, "permission-denied", []],
    ["integrity denies after permission and gate ask", { permission: "ask", taint: "private", integrity: "deny" }, "integrity-held", ["AutoBlock"]],
    ["integrity denies after the permission asks", { permission: "ask", taint: "public", integrity: "deny" }, "integrity-held", ["AutoAllow"]],
    ["unattended: integrity refuses after the gate would prompt", { permission: "allow", taint: "private", integrity: "ask", mode: "unattended" }, "integrity-held", ["AutoBlock"]],
    ["unattended: integrity refuses after the permission would ask", { permission: "ask", taint: "public", integrity: "ask", mode: "unattended" }, "integrity-held", ["AutoAllow"]],
    ["headless: the permission's ask is refused first, as before", { permission: "ask", taint: "private", integrity: "ask", mode: "headless" }, "approval-unavailable", []],
    ["headless: the gate blocks", { permission: "allow", taint: "private", integrity: "ask", mode: "headless" }, "gate-blocked", ["AutoBlock"]],
  ] as const)("%s", (_name, o, reason, events) => {
    const d = decideToolCall(input(o));
    expect(d).toMatchObject({ kind: "refuse", reason });
    expect(d.events.map((e) => e.decision_source)).toEqual(events);
  });

  it("yolo: the permission is allow and the gate and integrity are waived, with no prompt", () => {
    const d = decideToolCall(input({ permission: "ask", taint: "private", integrity: "ask", mode: "yolo" }));
    expect(d).toMatchObject({ kind: "run", source: "integrity_waived" });
  });

  it("a call whose held prompt was answered runs, the steps it settled not decided again", () => {
    const d = decideToolCall({ ...input({ permission: "ask", taint: "private", integrity: "ask" }), permissionApproved: true, answeredPrompt: true, passed: { gate: "user_allow_once", integrity: true } });
    expect(d).toMatchObject({ kind: "run", source: "user_allow_once", events: [] });
  });
});
