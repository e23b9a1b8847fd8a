// The AgentDojo table (bench/agentdojo/summary.ts) from runs as the harness records them: the exfiltration column
// never shows a rate over no pair (a suite whose tasks could not be computed says so), and autonomy counts the user
// tasks' acting calls that ran with no person asked.
import { describe, expect, it } from "vitest";
import { renderAgentDojoTable, summarizeAgentDojo, type AgentDojoRun } from "../../bench/agentdojo/summary.ts";

type Call = AgentDojoRun["calls"][number];
const call = (tool: string, acting: boolean, executed: boolean, asks = 0, phase: Call["phase"] = "user"): Call =>
  ({ phase, tool, acting, executed, refusal: executed ? null : "gate-blocked", asks: Array.from({ length: asks }, () => ({})) });
const run = (suite: string, mode: string, userTask: string, injectionTask: string | null, security: boolean | null, calls: Call[]): AgentDojoRun =>
  ({ suite, mode, userTask, injectionTask, utility: calls.every((c) => c.phase !== "user" || c.executed), security, attackSource: injectionTask === null ? null : "agentdojo", calls });

const runs: AgentDojoRun[] = [
  run("held-out", "gate-off", "u0", null, null, [call("read", false, true), call("pay", true, true)]),
  run("held-out", "gate-off", "u0", "i0", true, [call("read", false, true), call("pay", true, true, 0, "injection")]),
  run("held-out", "unattended", "u0", null, null, [call("read", false, true), call("pay", true, false)]),
  run("held-out", "unattended", "u0", "i0", false, [call("read", false, true), call("pay", true, false, 0, "injection")]),
  run("held-out", "interactive", "u0", null, null, [call("read", false, true), call("pay", true, true, 1)]),
  run("held-out", "interactive", "u0", "i0", false, [call("read", false, true), call("pay", true, false, 1, "injection")]),
  run("listed", "gate-off", "u0", null, null, [call("send", true, true)]),
  run("listed", "gate-off", "u0", "i0", true, [call("send", true, true, 0, "injection")]),
  run("listed", "unattended", "u0", null, null, [call("send", true, true)]),
  run("listed", "unattended", "u0", "i0", false, [call("send", true, false, 0, "injection")]),
];

describe("the AgentDojo summary", () => {
  it("says 'not computed' for a suite whose exfiltration tasks are unknown, and never a rate over no pair", () => {
    const table = renderAgentDojoTable(summarizeAgentDojo(runs, { "held-out": null, listed: ["i0"] }), "v1.2.2", { "held-out": "not computed (ValueError: no environment)", listed: "listed" });
    expect(table).not.toContain("(0/0)");
    expect(table).toMatch(/^\| held-out \| unattended \| 1 \|.*\| not computed for held-out \|/m);
    expect(table).toMatch(/^\| listed \| unattended \| 1 \|.*\| 0\.0 % \(0\/1\) \|/m);
    expect(table).toMatch(/^\| all \| unattended \| 2 \|.*\| 0\.0 % \(0\/1\); not computed for held-out \|/m);
    expect(table).toContain("Exfiltration tasks: held-out not computed (ValueError: no environment); listed listed by the harness.");
    const none = renderAgentDojoTable(summarizeAgentDojo(runs.filter((r) => r.suite === "listed"), { listed: [] }), "v1.2.2");
    expect(none).toMatch(/^\| listed \| unattended \| 1 \|.*\| – \(no exfiltration task\) \|/m);
  });

  it("counts autonomy over the user tasks' acting calls run alone: a refused or asked call is not autonomous", () => {
    const rows = summarizeAgentDojo(runs, { "held-out": null, listed: ["i0"] });
    const pick = (suite: string, mode: string) => rows.find((r) => r.suite === suite && r.mode === mode)!;
    expect([pick("held-out", "gate-off").autonomy, pick("held-out", "unattended").autonomy, pick("held-out", "interactive").autonomy]).toEqual([1, 0, 0]);
    expect(pick("held-out", "interactive").asksPerTask).toBe(1);
    expect([pick("all", "unattended").actingCalls, pick("all", "unattended").autonomy]).toEqual([2, 0.5]);
    // A record from before the calls said whether they act: no autonomy, rather than a wrong one.
    const old = runs.map((r) => ({ ...r, calls: r.calls.map(({ acting: _acting, ...c }) => c) }));
    expect(summarizeAgentDojo(old, {}).every((r) => r.autonomy === undefined)).toBe(true);
  });
});
