import { describe, expect, it } from "vitest";
import type { AllowlistRule } from "./allowlist.ts";
import { compileRules } from "./cel-library.ts";
import type { ClassificationOverride } from "./classification.ts";
import { ContextTaint } from "./context-taint.ts";
import { DEFAULT_PROMPT_TIMEOUT_SECONDS, addSessionRaise, answerGatePrompt, decideGateChoice, evaluateGate } from "./gate.ts";
import type { GateInput, GateMode, GateOutcome } from "./gate.ts";
import type { Level } from "./levels.ts";

const clock = () => 1_724_300_000_000;

function contextAt(level: Level): ContextTaint {
  const ctx = new ContextTaint();
  if (level !== "public") ctx.label("research", "read-1", level);
  return ctx;
}

function input(over: Partial<GateInput> & { taint?: Level } = {}): GateInput {
  const { taint = "private", ...rest } = over;
  return {
    taintTracking: true,
    agentId: "run-1",
    callId: "call-7",
    tool: "shell",
    context: contextAt(taint),
    policy: { overrides: new Map(), allowlist: [], rules: compileRules([]) },
    mode: "interactive",
    sessionRaises: new Set(),
    promptTimeoutSeconds: DEFAULT_PROMPT_TIMEOUT_SECONDS,
    clock,
    ...rest,
  };
}

/** The events as `[decision_source, taint_level, clearance, allowed]`, to compare sequences compactly. */
const trail = (o: { events: GateOutcome["events"] }) => o.events.map((e) => [e.decision_source, e.taint_level, e.clearance, e.allowed]);

describe("evaluateGate: before the mode", () => {
  it("taint tracking off: runs, no records", () => {
    const got = evaluateGate(input({ taintTracking: false, mode: "headless" }));
    expect(got.kind).toBe("run");
    expect(got.events).toEqual([]);
  });

  it("a non-outbound tool auto-allows and records Public whatever the taint", () => {
    const got = evaluateGate(input({ tool: "read_file" }));
    expect(got.kind).toBe("run");
    expect(trail(got)).toEqual([["AutoAllow", "Public", "Public", true]]);
    expect(got.events[0]).toEqual({
      timestamp: 1724300000, agent_id: "run-1", tool_name: "read_file", taint_level: "Public", clearance: "Public", allowed: true, decision_source: "AutoAllow",
    });
  });

  it("within clearance auto-allows with the real taint", () => {
    expect(trail(evaluateGate(input({ taint: "public" })))).toEqual([["AutoAllow", "Public", "Public", true]]);
    const overrides = new Map<string, ClassificationOverride>([["shell", { clearance: "internal" }]]);
    const got = evaluateGate(input({ taint: "internal", policy: { overrides, allowlist: [], rules: compileRules([]) } }));
    expect(trail(got)).toEqual([["AutoAllow", "Internal", "Internal", true]]);
  });

  it("an ordinary read_file (internal) is enough to gate shell", () => {
    const got = evaluateGate(input({ taint: "internal", mode: "headless" }));
    expect(got.kind).toBe("block");
  });

  it("an unknown tool fails closed: gated as outbound with public clearance", () => {
    const got = evaluateGate(input({ tool: "github__create_issue", taint: "internal", mode: "headless" }));
    expect(got.kind).toBe("block");
    expect(got.classification).toEqual({ sensitivity: "public", direction: "outbound", clearance: "public" });
  });

  it("an override that makes an MCP tool inbound lets it through", () => {
    const overrides = new Map<string, ClassificationOverride>([["srv__lookup", { direction: "inbound" }]]);
    const got = evaluateGate(input({ tool: "srv__lookup", policy: { overrides, allowlist: [], rules: compileRules([]) } }));
    expect(trail(got)).toEqual([["AutoAllow", "Public", "Public", true]]);
  });

  it("an unrecognised override direction is ignored (still gated) and warned about", () => {
    const overrides = new Map<string, ClassificationOverride>([["srv__send", { direction: "egress" }]]);
    const got = evaluateGate(input({ tool: "srv__send", mode: "headless", policy: { overrides, allowlist: [], rules: compileRules([]) } }));
    expect(got.kind).toBe("block");
    expect(got.warnings).toHaveLength(1);
  });

  it("an allowlist rule allows after AutoBlock, with its 0-based index", () => {
    const allowlist: AllowlistRule[] = [
      { tool: "send_email", to: ["megan@*"], channel: [], maxSensitivity: "private" },
      { tool: "shell", to: [], channel: [], maxSensitivity: "private" },
    ];
    const got = evaluateGate(input({ mode: "headless", policy: { overrides: new Map(), allowlist, rules: compileRules([]) } }));
    expect(got.kind).toBe("run");
    expect(trail(got)).toEqual([["AutoBlock", "Private", "Public", false], [{ AllowlistRule: { rule_index: 1 } }, "Private", "Public", true]]);
  });

  it("a target-scoped rule matches only with a target", () => {
    const allowlist: AllowlistRule[] = [{ tool: "web_fetch", to: ["*.example.com"], channel: [], maxSensitivity: "private" }];
    const policy = { overrides: new Map(), allowlist, rules: compileRules([]) };
    expect(evaluateGate(input({ tool: "web_fetch", mode: "headless", policy })).kind).toBe("block");
    expect(evaluateGate(input({ tool: "web_fetch", mode: "headless", policy, target: "api.example.com" })).kind).toBe("run");
  });

  it("a gateway tool's declared target is taken from its arguments and matched by the allowlist", () => {
    const overrides = new Map<string, ClassificationOverride>([["bank__send_money", { direction: "outbound", target: { arguments: ["recipient"], kind: "value" } }]]);
    const allowlist: AllowlistRule[] = [{ tool: "bank__send_money", to: ["GB29NWBK60161331926819"], channel: [], maxSensitivity: "private" }];
    const policy = { overrides, allowlist, rules: compileRules([]) };
    const pay = (recipient: string) => evaluateGate(input({ tool: "bank__send_money", mode: "headless", policy, args: { recipient, amount: 10 } }));
    expect(pay("GB29NWBK60161331926819").kind).toBe("run");
    expect(pay("US133000000121212121212").kind).toBe("block");
    // Without its declaration the tool has no recipient-like argument the built-in rule reads: no target.
    const undeclared = { overrides: new Map<string, ClassificationOverride>(), allowlist: [{ ...allowlist[0]!, tool: "bank__pay" }], rules: compileRules([]) };
    expect(evaluateGate(input({ tool: "bank__pay", mode: "headless", policy: undeclared, args: { iban: "GB29NWBK60161331926819" } })).kind).toBe("block");
  });

  it("the arguments decide the targets even when a target is given beside them", () => {
    const allowlist: AllowlistRule[] = [{ tool: "web_fetch", to: ["*.example.com"], channel: [], maxSensitivity: "private" }];
    const policy = { overrides: new Map(), allowlist, rules: compileRules([]) };
    expect(evaluateGate(input({ tool: "web_fetch", mode: "headless", policy, target: "api.example.com", args: { url: "https://evil.test/x" } })).kind).toBe("block");
  });

  it("CEL rules see the call's arguments as args", () => {
    const overrides = new Map<string, ClassificationOverride>([["bank__send_money", { target: { arguments: ["recipient"], kind: "value" } }]]);
    const rules = compileRules([{ name: "known-payee-small", source: `tool == "bank__send_money" && target == "GB29" && args.amount <= 100` }]);
    const policy = { overrides, allowlist: [], rules };
    const pay = (amount: number) => evaluateGate(input({ tool: "bank__send_money", mode: "headless", policy, args: { recipient: "GB29", amount } }));
    expect(trail(pay(99.5))).toEqual([["AutoBlock", "Private", "Public", false], [{ ScriptedRule: { script_name: "known-payee-small" } }, "Private", "Public", true]]);
    expect(pay(100.5).kind).toBe("block");
  });

  it("a bash allowlist rule never allows a shell call", () => {
    const allowlist: AllowlistRule[] = [{ tool: "bash", to: [], channel: [], maxSensitivity: "private" }];
    expect(evaluateGate(input({ mode: "headless", policy: { overrides: new Map(), allowlist, rules: compileRules([]) } })).kind).toBe("block");
  });

  it("a CEL rule allows after the allowlist failed, recorded by name", () => {
    const rules = compileRules([{ name: "zz-late", source: "true" }, { name: "company", source: `tool == "shell" && taint_level == "private"` }]);
    const got = evaluateGate(input({ mode: "headless", policy: { overrides: new Map(), allowlist: [], rules } }));
    expect(trail(got)).toEqual([["AutoBlock", "Private", "Public", false], [{ ScriptedRule: { script_name: "company" } }, "Private", "Public", true]]);
  });

  it("a rule that errors is no opinion: the call stays blocked", () => {
    const rules = compileRules([{ name: "bad", source: "1 / 0 == 0" }, { name: "str", source: `"yes"` }]);
    const got = evaluateGate(input({ mode: "headless", policy: { overrides: new Map(), allowlist: [], rules } }));
    expect(got.kind).toBe("block");
    expect(got.ruleDiagnostics.map((d) => d.kind)).toEqual(["eval-error", "non-boolean"]);
  });

  it("allowlist and rules are not consulted when the clearance check passes", () => {
    const rules = compileRules([{ name: "r", source: "true" }]);
    const got = evaluateGate(input({ taint: "public", policy: { overrides: new Map(), allowlist: [], rules } }));
    expect(trail(got)).toEqual([["AutoAllow", "Public", "Public", true]]);
  });
});

describe("evaluateGate: modes (§3.4, §6.3)", () => {
  it.each<[GateMode, string, unknown[][]]>([
    ["yolo", "waived", [["AutoBlock", "Private", "Public", false], ["YoloAutoApprove", "Private", "Public", true]]],
    ["headless", "block", [["AutoBlock", "Private", "Public", false]]],
    ["interactive", "prompt", [["AutoBlock", "Private", "Public", false]]],
    ["unattended", "prompt", [["AutoBlock", "Private", "Public", false]]],
  ])("%s: %s", (mode, kind, events) => {
    for (const tool of ["shell", "submit_output"]) {
      const got = evaluateGate(input({ mode, tool }));
      expect(got.kind).toBe(kind);
      expect(trail(got)).toEqual(events);
    }
  });

  it("headless gives the exact block text with the source regions", () => {
    const ctx = new ContextTaint();
    ctx.label("conversation", "a", "internal");
    ctx.label("research", "b", "private");
    ctx.label("notes", "c", "public");
    const got = evaluateGate(input({ mode: "headless", context: ctx }));
    expect(got.kind === "block" && got.message).toBe(
      "[blocked] Tool 'shell' would send Private-level data over a channel cleared only for Public (tainted by: conversation, research). Add an allowlist rule with `lev policy add` to permit it.",
    );
  });

  it("headless with no source region names the context", () => {
    const ctx = { level: (): Level => "internal", sourceRegions: () => [] };
    const got = evaluateGate(input({ mode: "headless", context: ctx, tool: "submit_output" }));
    expect(got.kind === "block" && got.message).toBe(
      "[blocked] Tool 'submit_output' would send Internal-level data over a channel cleared only for Public (tainted by: context). Add an allowlist rule with `lev policy add` to permit it.",
    );
  });

  it("the prompt has upstream's text, options, id and timeout", () => {
    const got = evaluateGate(input({ mode: "interactive" }));
    if (got.kind !== "prompt") throw new Error("expected a prompt");
    expect(got.prompt).toEqual({
      requestId: "gate-call-7",
      source: "taint_gate",
      text: "Tool 'shell' would send Private-level data over a channel cleared only for Public. Allow it?",
      options: ["Allow once", "Allow for this session", "Deny"],
      timeoutSeconds: 3600,
    });
    expect(got.pending).toEqual({ agentId: "run-1", tool: "shell", taint: "private", clearance: "public" });
  });

  it("timeout 0 waits forever (no expiry)", () => {
    const got = evaluateGate(input({ mode: "unattended", promptTimeoutSeconds: 0 }));
    expect(got.kind === "prompt" && got.prompt.timeoutSeconds).toBeUndefined();
  });
});

describe("answering a gate prompt (§7)", () => {
  const pending = { agentId: "run-1", tool: "shell", taint: "private", clearance: "public" } as const;

  it.each([
    [{ kind: "choice", index: 0 }, "allow-once"],
    [{ kind: "choice", index: 1 }, "allow-session"],
    [{ kind: "choice", index: 2 }, "deny"],
    [{ kind: "choice", index: 7 }, "deny"],
    [{ kind: "choice", index: undefined }, "deny"],
    [{ kind: "cancelled" }, "deny"],
    [{ kind: "expired" }, "deny"],
  ] as const)("%j means %s", (answer, want) => {
    expect(decideGateChoice(answer)).toBe(want);
  });

  it("allow once: UserAllowOnce, runs, nothing remembered", () => {
    const got = answerGatePrompt(pending, { kind: "choice", index: 0 }, clock);
    expect(got).toMatchObject({ kind: "run", raiseClearanceOf: undefined });
    expect(trail(got)).toEqual([["UserAllowOnce", "Private", "Public", true]]);
  });

  it("deny and expiry: UserDenied with the lower-case message", () => {
    for (const answer of [{ kind: "choice", index: 2 }, { kind: "expired" }] as const) {
      const got = answerGatePrompt(pending, answer, clock);
      expect(trail(got)).toEqual([["UserDenied", "Private", "Public", false]]);
      expect(got.kind === "block" && got.message).toBe(
        "[blocked] Tool 'shell' would send data at private sensitivity, above its public clearance. Denied by user.",
      );
    }
  });

  it("allow for this session: UserAlwaysAllow, then later calls of that exact tool auto-pass with clearance Private", () => {
    const got = answerGatePrompt(pending, { kind: "choice", index: 1 }, clock);
    expect(trail(got)).toEqual([["UserAlwaysAllow", "Private", "Public", true]]);
    if (got.kind !== "run" || got.raiseClearanceOf === undefined) throw new Error("expected a raise");
    const raises = addSessionRaise(new Set(), got.raiseClearanceOf);
    expect(trail(evaluateGate(input({ sessionRaises: raises })))).toEqual([["AutoAllow", "Private", "Private", true]]);
    expect(evaluateGate(input({ sessionRaises: raises, tool: "bash", mode: "headless" })).kind).toBe("block");
    expect(evaluateGate(input({ sessionRaises: raises, tool: "web_fetch", mode: "headless" })).kind).toBe("block");
  });
});
