// Gate audit records (taint-gate spec §6.2): upstream's `taint_audit.json` event shape, field for
// field, so existing readers keep working; we append them as JSON Lines instead of rewriting a file.
import type { GateDecisionSource } from "../api/decision-sources.ts";
import { formatLevelCapitalised } from "./levels.ts";
import type { CapitalisedLevel, Level } from "./levels.ts";

/** How a gate decision was reached: a bare string or a one-key object, exactly as upstream serialises it. */
export type DecisionSource =
  | "AutoAllow"
  | "AutoBlock"
  | "UserAllowOnce"
  | "UserAlwaysAllow"
  | "UserDenied"
  | "YoloAutoApprove"
  | { readonly AllowlistRule: { readonly rule_index: number } }
  | { readonly ScriptedRule: { readonly script_name: string } };

/** One audit record; field names and order are upstream's. */
export interface AuditEvent {
  /** Integer Unix seconds. */
  readonly timestamp: number;
  readonly agent_id: string;
  readonly tool_name: string;
  readonly taint_level: CapitalisedLevel;
  readonly clearance: CapitalisedLevel;
  readonly allowed: boolean;
  readonly decision_source: DecisionSource;
}

const KIND_OF: Readonly<Record<Exclude<DecisionSource, object>, GateDecisionSource>> = {
  AutoAllow: "auto_allow",
  AutoBlock: "auto_block",
  UserAllowOnce: "user_allow_once",
  UserAlwaysAllow: "user_always_allow",
  UserDenied: "user_denied",
  YoloAutoApprove: "yolo_auto_approve",
};

/** The metric label of a decision source: its row of the decision-source table (api/decision-sources.ts). */
export function decisionSourceKind(source: DecisionSource): GateDecisionSource {
  if (typeof source === "string") return KIND_OF[source];
  return "AllowlistRule" in source ? "allowlist_rule" : "scripted_rule";
}

/** The source of an allowlist allow; `index` is the rule's 0-based position. */
export function allowlistSource(index: number): DecisionSource {
  return { AllowlistRule: { rule_index: index } };
}

/** The source of a scripted-rule allow; `name` is the rule's file stem. */
export function scriptedSource(name: string): DecisionSource {
  return { ScriptedRule: { script_name: name } };
}

/** The clock, injected: milliseconds since the Unix epoch (pass `Date.now`). */
export type Clock = () => number;

/** What one record is built from. */
export interface AuditFields {
  readonly agentId: string;
  readonly tool: string;
  readonly taint: Level;
  readonly clearance: Level;
  readonly allowed: boolean;
  readonly source: DecisionSource;
}

/** Builds a record stamped with the clock's whole seconds, keys in upstream's order. */
export function buildAuditEvent(clock: Clock, fields: AuditFields): AuditEvent {
  return {
    timestamp: Math.floor(clock() / 1000),
    agent_id: fields.agentId,
    tool_name: fields.tool,
    taint_level: formatLevelCapitalised(fields.taint),
    clearance: formatLevelCapitalised(fields.clearance),
    allowed: fields.allowed,
    decision_source: fields.source,
  };
}

/** One JSON Lines line (with its newline) for an append-only audit file. */
export function formatAuditLine(event: AuditEvent): string {
  return `${JSON.stringify(event)}\n`;
}
