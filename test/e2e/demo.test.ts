// The README's first command as root, end to end (issue 33): `scripts/demo --once` starts its own control plane
// and node beside the suite's, installs the chart with real helm, and runs examples/ with the reference runtime
// and the scripted stand-in for the model to Succeeded, answering both prompts with `kubectl leviath approve`.
// Checked from what the user sees: the commands and their answers, the refused read in the audit, the result,
// and nothing of the demo's cluster left on the machine afterwards.
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runDemo } from "../integration/harness/run-demo.ts";

describe("scripts/demo --once, as root", () => {
  it("runs the example Agent to Succeeded, its prompts answered with kubectl leviath, and removes its cluster", async () => {
    const { code, stdout, stderr } = await runDemo(["--once"]);
    expect(code, `${stdout}\n${stderr}`).toBe(0);

    // What a fresh machine lacks is prepared first, each step saying what it is and what it costs the first time.
    expect(stdout).toMatch(/^--- scripts\/control-plane-bin: .+ \(the first time: 25 to 60 minutes on 2 cores\)$/m);
    // The shell call asked (the Agent's `shell: ask`), then the taint gate held the result; both answered with the plugin.
    const approvals = [...stdout.matchAll(/^\$ kubectl leviath approve digest-docs (\S+) --once --reason .+ -n leviath-sandbox\napproval\.leviath\.dev\/digest-docs-\S+ created: allowOnce for prompt '(\S+)' of run 'digest-docs'\napplied: allowOnce$/gm)];
    expect(approvals.map((m) => m[1]!.split("-")[0])).toEqual(["tool", "gate"]);
    expect(approvals.every((m) => m[1] === m[2])).toBe(true);
    expect(stdout).toMatch(/^leviath-sandbox\s+digest-docs\s+tool-mcp-\S+\s+tool_approval\s+shell\s+survey\s/m);
    expect(stdout).toMatch(/^leviath-sandbox\s+digest-docs\s+gate-mcp-\S+\s+taint_gate\s+submit_output\s+digest\s/m);
    // The Run ended by itself, its result is the digest, and the audit names the refused read and who allowed what.
    expect(stdout).toMatch(/^run\.leviath\.dev\/digest-docs Succeeded: /m);
    expect(stdout).toMatch(/^digest-docs\s+notes-digest\s+Succeeded\s+AgentSucceeded\s+digest\s+private\s/m);
    expect(stdout).toContain("$ kubectl leviath result digest-docs -n leviath-sandbox\n# Digest\n- The docs site moves to the new theme this week.\n");
    expect(stdout).toMatch(/\sread_file\s+allow\s+auto_allow\s+call_id=\S+ paths=\["\/data\/team-notes\/2025-06-02-standup\.md"\]/);
    expect(stdout).toMatch(/\sread_file\s+deny\s+read_path\s+call_id=\S+ code=not-declared paths=\["\/etc\/passwd"\]/);
    expect(stdout).toMatch(/\ssubmit_output\s+allow\s+user_allow_once\s+call_id=\S+ approved_by=\S+ approval_reason=the dige/);
    expect(stdout).toContain("\nThe Run ended Succeeded.\n");
    // Its control plane and node are gone: the data dirs it printed were removed.
    const dirs = [/kubeconfig (\S+)\/kubeconfig/.exec(stdout)?.[1], /logs in (\S+)/.exec(stdout)?.[1]];
    expect(dirs.every((d) => d !== undefined), stdout).toBe(true);
    for (const dir of dirs) expect(existsSync(dir!), dir).toBe(false);
  }, 900_000);
});
