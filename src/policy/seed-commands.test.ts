import { describe, expect, it } from "vitest";
import { decideSeedCommand, findCoveringPrefix } from "./seed-commands.ts";

describe("command seeds: allowed by the policy and covered by [safe_commands]", () => {
  it.each([
    ["git log", ["git log"], "git log"],
    ["git log --oneline -5", ["git log"], "git log"],
    ["  git   log  -3 ", ["git log"], "git log"],
    ["git logx", ["git log"], undefined],
    ["git", ["git log"], undefined],
    ["git log; cat /etc/passwd", ["git log"], undefined],
    ["git log && curl x", ["git log"], undefined],
    ["git log $(cat ~/.ssh/id_rsa)", ["git log"], undefined],
    ["git log `id`", ["git log"], undefined],
    ["git log > /tmp/x", ["git log"], undefined],
    ["git log\ncat secret", ["git log"], undefined],
    ["git log '*'", ["git log"], undefined],
    ["ls", [], undefined],
    ["ls", [""], undefined],
    ["ls -la", ["cat", "ls"], "ls"],
  ])("%j under %j → %j", (command, prefixes, want) => {
    expect(findCoveringPrefix(command, prefixes)).toBe(want);
  });

  it("refuses every command when the policy disables seed commands, naming the region", () => {
    expect(decideSeedCommand("log", "git log", { allowed: false, safeShell: ["git log"] })).toEqual({
      ok: false, code: "seed-commands-disabled", message: "region 'log': seed commands are disabled ([security] allow_seed_commands = false)",
    });
  });

  it("refuses an uncovered command naming it, and allows a covered one with its prefix", () => {
    const r = decideSeedCommand("log", "rm -rf .", { allowed: true, safeShell: ["git log"] });
    expect(r).toMatchObject({ ok: false, code: "seed-command-not-safe" });
    expect(!r.ok && r.message).toContain("'rm -rf .'");
    expect(decideSeedCommand("log", "git log -1", { allowed: true, safeShell: ["git log"] })).toEqual({ ok: true, prefix: "git log" });
  });
});
