import { describe, expect, it } from "vitest";
import type { AllowlistRule } from "./allowlist.ts";
import { compileRules } from "./cel-library.ts";
import type { ClassificationOverride } from "./classification.ts";
import {
  buildPolicyAddRule,
  computePolicyTest,
  parseSensitivityFlag,
  parseTaintFlag,
  renderPolicyAdded,
  renderPolicyList,
  renderPolicyTest,
} from "./policy-test.ts";
import type { PolicyTestInput } from "./policy-test.ts";

const empty = { allowlist: [], overrides: new Map<string, ClassificationOverride>(), rules: compileRules([]) };
const run = (over: Partial<PolicyTestInput> & { tool: string }) => computePolicyTest({ ...empty, ...over });

describe("policy test (dry run)", () => {
  it("blocked shell at the default private taint", () => {
    const r = run({ tool: "shell" });
    expect(r).toMatchObject({ tool: "shell", sensitivity: "public", direction: "outbound", clearance: "public", taint: "private", result: "blocked", source: "none" });
    expect(r.rule).toBeUndefined();
    expect(renderPolicyTest(r)).toBe(
      [
        "Tool: shell",
        "  Sensitivity: public",
        "  Direction: outbound",
        "  Clearance: public",
        "",
        "Test scenario:",
        "  Taint level: private",
        "",
        "Gate fires: taint private > clearance public",
        "Result: BLOCKED (no allowlist or scripted rule matched)",
        "  The user would be prompted to allow/deny.",
        "",
      ].join("\n"),
    );
  });

  it("not outbound", () => {
    const r = run({ tool: "read_file", taint: "internal" });
    expect(r).toMatchObject({ result: "allowed", source: "not-outbound", sensitivity: "internal", direction: "inbound" });
    expect(renderPolicyTest(r).split("\n").slice(-2)).toEqual(["Result: ALLOWED (tool is not outbound - no gate check needed)", ""]);
  });

  it("within clearance", () => {
    const r = run({ tool: "shell", taint: "public" });
    expect(r).toMatchObject({ result: "allowed", source: "within-clearance" });
    expect(renderPolicyTest(r)).toContain("\n\nResult: ALLOWED (taint public <= clearance public)\n");
  });

  it("allowed by an allowlist rule (1-based), with the target shown", () => {
    const allowlist: AllowlistRule[] = [
      { tool: "send_email", to: ["megan@*"], channel: [], maxSensitivity: "private" },
      { tool: "send_email", to: ["*.example.com"], channel: [], maxSensitivity: "private" },
    ];
    const r = run({ tool: "send_email", target: "api.example.com", allowlist });
    expect(r).toMatchObject({ result: "allowed", source: "allowlist", rule: 2, target: "api.example.com" });
    expect(renderPolicyTest(r)).toBe(
      [
        "Tool: send_email",
        "  Sensitivity: public",
        "  Direction: outbound",
        "  Clearance: public",
        "",
        "Test scenario:",
        "  Taint level: private",
        "  Target: api.example.com",
        "",
        "Result: ALLOWED by allowlist rule #2",
        "",
      ].join("\n"),
    );
  });

  it("a target-scoped rule does not match without a target", () => {
    const allowlist: AllowlistRule[] = [{ tool: "send_email", to: ["*"], channel: [], maxSensitivity: "private" }];
    expect(run({ tool: "send_email", allowlist }).result).toBe("blocked");
  });

  it("allowed by a scripted rule, by name", () => {
    const rules = compileRules([{ name: "company", source: `target.endsWith("@mycompany.com")` }]);
    const r = run({ tool: "send_email", target: "bob@mycompany.com", rules });
    expect(r).toMatchObject({ result: "allowed", source: "rule", rule: "company" });
    expect(renderPolicyTest(r)).toContain("\nResult: ALLOWED by scripted rule 'company'\n");
  });

  it("applies overrides to the classification it prints", () => {
    const overrides = new Map<string, ClassificationOverride>([["shell", { clearance: "private", direction: "egress" }]]);
    const r = run({ tool: "shell", overrides });
    expect(r).toMatchObject({ clearance: "private", direction: "outbound", result: "allowed", source: "within-clearance" });
    expect(r.warnings).toHaveLength(1);
    expect(renderPolicyTest(r)).toContain("  Clearance: private\n");
  });

  it("taint and sensitivity flags", () => {
    expect(parseTaintFlag()).toEqual({ ok: true, value: "private" });
    expect(parseTaintFlag("INTERNAL")).toEqual({ ok: true, value: "internal" });
    expect(parseTaintFlag("secret")).toEqual({ ok: false, error: "Invalid taint level: 'secret'. Use: public, internal, private" });
    expect(parseSensitivityFlag()).toEqual({ ok: true, value: "internal" });
    expect(parseSensitivityFlag("high")).toEqual({ ok: false, error: "Invalid sensitivity level: 'high'. Use: public, internal, private" });
  });
});

describe("policy add", () => {
  it("builds the rule and echoes the level as typed", () => {
    expect(buildPolicyAddRule("send_email", "internal", "*.example.com")).toEqual({ tool: "send_email", to: ["*.example.com"], channel: [], maxSensitivity: "internal" });
    expect(buildPolicyAddRule("bash", "private")).toEqual({ tool: "bash", to: [], channel: [], maxSensitivity: "private" });
    expect(renderPolicyAdded({ tool: "send_email", maxSensitivityText: "Internal", target: "*.example.com", path: "/c/policy.toml" })).toBe(
      "Added rule: send_email [max: Internal]\n  Target: *.example.com\nSaved to: /c/policy.toml\n",
    );
    expect(renderPolicyAdded({ tool: "shell", maxSensitivityText: "internal", path: "/c/policy.toml" })).toBe(
      "Added rule: shell [max: internal]\nSaved to: /c/policy.toml\n",
    );
  });
});

describe("policy list", () => {
  it("empty policy, no rules directory", () => {
    expect(renderPolicyList({ allowlist: [], ruleFiles: undefined, overrides: new Map() })).toBe(
      "Taint Policy Rules\n==================\n\nNo static allowlist rules configured.\n\nNo scripted rules directory found.\n",
    );
    expect(renderPolicyList({ allowlist: [], ruleFiles: [], overrides: new Map() })).toContain("\nNo scripted rules found.\n");
  });

  it("rules, sorted rule files and overrides", () => {
    const text = renderPolicyList({
      allowlist: [
        { tool: "send_email", to: ["megan@*", "+17576306267"], channel: [], maxSensitivity: "private" },
        { tool: "post_to_slack", to: [], channel: ["#team-standup"], maxSensitivity: "internal" },
        { tool: "shell", to: [], channel: [], maxSensitivity: "public" },
      ],
      ruleFiles: [{ name: "zeta", path: "/r/zeta.cel" }, { name: "company", path: "/r/company.cel" }],
      overrides: new Map<string, ClassificationOverride>([
        ["srv__send", { sensitivity: "private", direction: "egress", clearance: "public" }],
        ["shell", { clearance: "private" }],
      ]),
    });
    expect(text).toBe(
      [
        "Taint Policy Rules",
        "==================",
        "",
        "Static Rules (3):",
        "  1. send_email [max: private] → megan@*, +17576306267",
        "  2. post_to_slack [max: internal] → #team-standup",
        "  3. shell [max: public] → (any target)",
        "",
        "Scripted Rules (2):",
        "  - company (/r/company.cel)",
        "  - zeta (/r/zeta.cel)",
        "",
        "MCP Tool Overrides (2):",
        "  shell [clearance=private]",
        "  srv__send [sensitivity=private, direction=egress, clearance=public]",
        "",
      ].join("\n"),
    );
  });
});
