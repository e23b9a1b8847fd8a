import { describe, expect, it } from "vitest";
import { createAuditTee } from "./audit-tee.ts";
import type { AuditSink, DecisionRecord } from "./audit-writer.ts";

const record: DecisionRecord = { timestamp: 1, agent_id: "r", call_id: "c1", tool_name: "read_file", stage: "main", decision: "allow", decision_source: "auto_allow" };

function inner(ok: boolean): AuditSink & { seen: number } {
  const sink = { seen: 0, gate: () => ok, decision: () => { sink.seen++; return ok; }, flush() {}, close() {} };
  return sink;
}

describe("createAuditTee", () => {
  it("sends each record on disk as one leviath_audit line, with its file and upstream fields verbatim", () => {
    const lines: string[] = [];
    const tee = createAuditTee(inner(true), "r", [(l) => (lines.push(l), true)]);
    expect(tee.decision(2, record)).toBe(true);
    expect(lines).toEqual([`${JSON.stringify({ leviath_audit: { run: "r", file: "stages/2/decisions.jsonl", record } })}\n`]);
  });

  it("refuses the record when an output is full, and sends nothing the files refused", () => {
    const lines: string[] = [];
    expect(createAuditTee(inner(true), "r", [(l) => (lines.push(l), true), () => false]).decision(0, record)).toBe(false);
    expect(lines).toHaveLength(1);
    expect(createAuditTee(inner(false), "r", [(l) => (lines.push(l), true)]).decision(0, record)).toBe(false);
    expect(lines).toHaveLength(1);
  });
});
