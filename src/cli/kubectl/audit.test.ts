import { describe, expect, it } from "vitest";
import { buildAuditRow, parseAuditLines } from "./audit.ts";
import { buildPendingRows } from "./pending.ts";

describe("audit and pending rows", () => {
  it("reads the stored audit lines and skips anything else", () => {
    const record = { timestamp: 1767225600, agent_id: "r", call_id: "s1", tool_name: "shell", stage: "main", decision: "allow", decision_source: "user_allow_once", approval_reason: "fine" };
    const text = [JSON.stringify({ leviath_audit: { run: "r", file: "stages/0/decisions.jsonl", record } }), "not json", JSON.stringify({ other: 1 }), ""].join("\n");
    const lines = parseAuditLines(text);
    expect(lines).toEqual([{ run: "r", file: "stages/0/decisions.jsonl", record }]);
    expect(buildAuditRow(lines[0]!)).toEqual(["2026-01-01T00:00:00Z", "stages/0/decisions.jsonl", "shell", "allow", "user_allow_once", "call_id=s1 approval_reason=fine"]);
  });

  it("lists each pending prompt of each Run", () => {
    const run = (name: string, ids: string[]) => ({
      metadata: { name, namespace: "ns", uid: "u" },
      status: { pendingApprovals: ids.map((id) => ({ id, kind: "taint_gate" as const, tool: "shell", stage: "main", prompt: "allow\nshell?", raisedAt: "2026-01-01T00:00:00Z" })) },
    });
    expect(buildPendingRows([run("a", ["gate-1", "gate-2"]), run("b", [])], Date.parse("2026-01-01T00:00:30Z")))
      .toEqual([["ns", "a", "gate-1", "taint_gate", "shell", "main", "30s", "allow shell?"], ["ns", "a", "gate-2", "taint_gate", "shell", "main", "30s", "allow shell?"]]);
  });
});
