import { describe, expect, it } from "vitest";
import { GATE_DECISION_SOURCES } from "../api/decision-sources.ts";
import { allowlistSource, buildAuditEvent, decisionSourceKind, formatAuditLine, scriptedSource } from "./gate-audit.ts";
import type { DecisionSource } from "./gate-audit.ts";

const clock = () => 1_724_300_000_999;

describe("audit events", () => {
  it("has upstream's exact fields, order and spellings", () => {
    const event = buildAuditEvent(clock, { agentId: "run-1", tool: "submit_output", taint: "private", clearance: "public", allowed: false, source: "AutoBlock" });
    expect(formatAuditLine(event)).toBe(
      `{"timestamp":1724300000,"agent_id":"run-1","tool_name":"submit_output","taint_level":"Private","clearance":"Public","allowed":false,"decision_source":"AutoBlock"}\n`,
    );
  });

  it("serialises rule sources as one-key objects", () => {
    const a = buildAuditEvent(clock, { agentId: "a", tool: "t", taint: "internal", clearance: "public", allowed: true, source: allowlistSource(0) });
    const s = buildAuditEvent(clock, { agentId: "a", tool: "t", taint: "internal", clearance: "public", allowed: true, source: scriptedSource("company") });
    expect(JSON.stringify(a.decision_source)).toBe(`{"AllowlistRule":{"rule_index":0}}`);
    expect(JSON.stringify(s.decision_source)).toBe(`{"ScriptedRule":{"script_name":"company"}}`);
  });

  it.each<[DecisionSource, string]>([
    ["AutoAllow", "auto_allow"],
    ["AutoBlock", "auto_block"],
    [allowlistSource(3), "allowlist_rule"],
    [scriptedSource("x"), "scripted_rule"],
    ["YoloAutoApprove", "yolo_auto_approve"],
    ["UserAllowOnce", "user_allow_once"],
    ["UserAlwaysAllow", "user_always_allow"],
    ["UserDenied", "user_denied"],
  ])("metric kind of %j is %s", (source, kind) => {
    expect(decisionSourceKind(source)).toBe(kind);
    expect(GATE_DECISION_SOURCES).toContain(kind);
  });

  it("has exactly eight kinds", () => {
    expect(GATE_DECISION_SOURCES).toHaveLength(8);
  });
});
