import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildAuditEvent } from "../../policy/gate-audit.ts";
import { createAuditWriter, isSafeRunName } from "./audit-writer.ts";
import { JsonLinesFile } from "./json-lines-file.ts";

const tmp = () => mkdtempSync(join(tmpdir(), "leviath-records-"));
const clock = () => 1_724_300_000_500;

describe("JsonLinesFile", () => {
  it("appends, and starts a fresh line after a record cut short by a crash", () => {
    const path = join(tmp(), "x", "a.jsonl");
    const f = new JsonLinesFile(path);
    f.append('{"a":1}\n');
    f.close();
    appendFileSync(path, '{"b":');
    const g = new JsonLinesFile(path);
    g.append('{"c":3}\n');
    g.close();
    expect(readFileSync(path, "utf8")).toBe('{"a":1}\n{"b":\n{"c":3}\n');
  });

  it("writes records with any characters, byte for byte", () => {
    const path = join(tmp(), "u.jsonl");
    const f = new JsonLinesFile(path);
    const lines = ['{"p":"caf\u00e9/\u2713"}\n', `${JSON.stringify({ p: "\u{1f600}".repeat(3000) })}\n`, '{"q":""}\n'];
    for (const line of lines) f.append(line);
    f.close();
    expect(readFileSync(path, "utf8")).toBe(lines.join(""));
  });
});

describe("createAuditWriter", () => {
  it("writes upstream's records per run and stage, keys in upstream's order", () => {
    const root = tmp();
    const errors: unknown[] = [];
    const audit = createAuditWriter(root, "run-1", (e) => errors.push(e));
    const event = buildAuditEvent(clock, { agentId: "run-1", tool: "shell", taint: "private", clearance: "public", allowed: false, source: "AutoBlock" });
    expect(audit.gate(0, [event])).toBe(true);
    expect(audit.gate(2, [{ ...event, allowed: true, decision_source: { AllowlistRule: { rule_index: 0 } } }])).toBe(true);
    audit.close();
    expect(readFileSync(join(root, "run-1/stages/0/taint_audit.jsonl"), "utf8")).toBe(
      '{"timestamp":1724300000,"agent_id":"run-1","tool_name":"shell","taint_level":"Private","clearance":"Public","allowed":false,"decision_source":"AutoBlock"}\n',
    );
    expect(readFileSync(join(root, "run-1/stages/2/taint_audit.jsonl"), "utf8")).toContain('"decision_source":{"AllowlistRule":{"rule_index":0}}');
    expect(errors).toEqual([]);
  });

  it("reports a record it cannot write instead of pretending", () => {
    const root = tmp();
    writeFileSync(join(root, "blocked"), "a file where a directory should be");
    const errors: unknown[] = [];
    const audit = createAuditWriter(join(root, "blocked"), "r", (e) => errors.push(e));
    expect(audit.decision(0, { timestamp: 1, agent_id: "r", call_id: "c", tool_name: "t", stage: "s", decision: "allow", decision_source: "auto_allow" })).toBe(false);
    expect(errors).toHaveLength(1);
  });

  it("accepts only one path component as a run name", () => {
    expect(isSafeRunName("my-run.1_a")).toBe(true);
    for (const bad of ["", ".", "..", "a/b", "../x", "a b"]) expect(isSafeRunName(bad)).toBe(false);
    expect(() => createAuditWriter(tmp(), "../escape", () => {})).toThrow();
  });
});
