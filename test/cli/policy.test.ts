import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";

const POLICY = repo("test/fixtures/config/policy.toml");

describe("leviath policy test", () => {
  it("prints upstream's dry run for a blocked call", () => {
    const r = leviath(["policy", "test", "shell", "--taint", "private", "--policy", POLICY]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe([
      "Tool: shell",
      "  Sensitivity: public",
      "  Direction: outbound",
      "  Clearance: internal",
      "",
      "Test scenario:",
      "  Taint level: private",
      "",
      "Gate fires: taint private > clearance internal",
      "Result: BLOCKED (no allowlist or scripted rule matched)",
      "  The user would be prompted to allow/deny.",
      "",
    ].join("\n"));
  });

  it("allows by allowlist rule with a matching target, and says which rule in JSON", () => {
    const r = leviath(["policy", "test", "send_email", "--target", "ops.example.com", "--taint", "internal", "--policy", POLICY, "--json"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      tool: "send_email", sensitivity: "public", direction: "outbound", clearance: "public", taint: "internal",
      target: "ops.example.com", result: "allowed", source: "allowlist", rule: 1,
    });
  });

  it("does not match a target-scoped rule without a target", () => {
    const r = leviath(["policy", "test", "send_email", "--taint", "internal", "--policy", POLICY, "--json"]);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: "blocked", source: "none" });
  });

  it("allows by a CEL rule in name order and names the rule", () => {
    const dir = mkdtempSync(join(tmpdir(), "leviath-rules-"));
    writeFileSync(join(dir, "b-shell.cel"), 'tool == "shell"');
    writeFileSync(join(dir, "a-broken.cel"), "tool ==");
    const r = leviath(["policy", "test", "shell", "--rules", dir, "--policy", join(dir, "none.toml"), "--json"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("none.toml: cannot read: no such file");
    const ok = leviath(["policy", "test", "shell", "--rules", dir, "--json"], { env: { XDG_CONFIG_HOME: dir } });
    expect(JSON.parse(ok.stdout)).toMatchObject({ result: "allowed", source: "rule", rule: "b-shell" });
    expect(ok.stderr).toContain("rule 'a-broken' has no opinion");
  });

  it("treats a tool that is not outbound as allowed and an unknown tool as outbound", () => {
    expect(JSON.parse(leviath(["policy", "test", "read_file", "--policy", POLICY, "--json"]).stdout)).toMatchObject({ result: "allowed", source: "not-outbound" });
    expect(JSON.parse(leviath(["policy", "test", "github__delete_repo", "--policy", POLICY, "--json"]).stdout)).toMatchObject({ direction: "outbound", result: "blocked" });
  });

  it("with --args takes the targets from the call's arguments as the live gate does, and rules see args", () => {
    const dir = mkdtempSync(join(tmpdir(), "leviath-args-"));
    const policy = join(dir, "policy.toml");
    writeFileSync(policy, [
      "[[allowlist]]", "tool = 'mail__send_email'", "to = ['*@corp.example']", "max_sensitivity = 'private'",
      "[mcp_overrides.mail.tools.send_email]", "target = ['recipients', 'cc']",
      "[mcp_overrides.bank.tools.send_money]", "target = 'recipient'", "",
    ].join("\n"));
    mkdirSync(join(dir, "rules"));
    writeFileSync(join(dir, "rules", "small-payments.cel"), 'tool == "bank__send_money" && target == "GB29" && args.amount <= 100');
    const test = (tool: string, args: unknown) => leviath(["policy", "test", tool, "--args", JSON.stringify(args), "--policy", policy, "--json"]);
    expect(JSON.parse(test("mail__send_email", { recipients: ["a@corp.example"], cc: ["b@corp.example"] }).stdout)).toMatchObject({ targets: ["a@corp.example", "b@corp.example"], result: "allowed", source: "allowlist", rule: 1 });
    expect(JSON.parse(test("mail__send_email", { recipients: ["a@corp.example"], cc: ["mark@evil.example"] }).stdout)).toMatchObject({ result: "blocked" });
    expect(JSON.parse(test("bank__send_money", { recipient: "GB29", amount: 50 }).stdout)).toMatchObject({ target: "GB29", result: "allowed", source: "rule", rule: "small-payments" });
    expect(JSON.parse(test("bank__send_money", { recipient: "GB29", amount: 5000 }).stdout)).toMatchObject({ result: "blocked" });
    const text = leviath(["policy", "test", "mail__send_email", "--args", '{"recipients":["a@corp.example","b@corp.example"]}', "--policy", policy]);
    expect(text.stdout).toContain("  Targets: a@corp.example, b@corp.example\n");
    const list = leviath(["policy", "list", "--policy", policy]);
    expect(list.stdout).toContain("  bank__send_money [target=recipient]");
    expect(list.stdout).toContain("  mail__send_email [target=recipients|cc]");
    const both = leviath(["policy", "test", "x", "--args", "{}", "--target", "y", "--policy", policy]);
    expect(both.status).toBe(2);
    expect(both.stderr).toContain("--args and --target exclude each other");
    expect(leviath(["policy", "test", "x", "--args", "[1]", "--policy", policy]).stderr).toContain("--args must be a JSON object");
  });

  it("rejects a bad taint level with upstream's message, exit 2", () => {
    const r = leviath(["policy", "test", "shell", "--taint", "secret", "--policy", POLICY]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("Invalid taint level: 'secret'. Use: public, internal, private");
  });
});

describe("leviath policy add and list", () => {
  it("appends a rule, keeps the file's comments, and lists it", () => {
    const dir = mkdtempSync(join(tmpdir(), "leviath-policy-"));
    const file = join(dir, "policy.toml");
    writeFileSync(file, "# team rules\n[[allowlist]]\ntool = \"http_post\"\n");
    const add = leviath(["policy", "add", "send_email", "--target", "*.example.com", "--max-sensitivity", "Internal", "--policy", file]);
    expect(add.status).toBe(0);
    expect(add.stdout).toBe(`Added rule: send_email [max: Internal]\n  Target: *.example.com\nSaved to: ${file}\n`);
    expect(readFileSync(file, "utf8")).toMatch(/^# team rules\n/);
    const list = leviath(["policy", "list", "--policy", file]);
    expect(list.status).toBe(0);
    expect(list.stdout).toBe([
      "Taint Policy Rules",
      "==================",
      "",
      "Static Rules (2):",
      "  1. http_post [max: public] → (any target)",
      "  2. send_email [max: internal] → *.example.com",
      "",
      "No scripted rules directory found.",
      "",
    ].join("\n"));
  });

  it("writes to the default location under XDG_CONFIG_HOME, and lists rules and overrides", () => {
    const dir = mkdtempSync(join(tmpdir(), "leviath-xdg-"));
    mkdirSync(join(dir, "leviath", "rules"), { recursive: true });
    writeFileSync(join(dir, "leviath", "rules", "ops.cel"), 'target == "ops@corp"');
    const add = leviath(["policy", "add", "shell"], { env: { XDG_CONFIG_HOME: dir } });
    expect(add.stdout).toContain(`Saved to: ${join(dir, "leviath", "policy.toml")}`);
    const list = leviath(["policy", "list"], { env: { XDG_CONFIG_HOME: dir } });
    expect(list.stdout).toContain("  1. shell [max: internal] → (any target)");
    expect(list.stdout).toContain(`Scripted Rules (1):\n  - ops (${join(dir, "leviath", "rules", "ops.cel")})`);
    const withOverrides = leviath(["policy", "list", "--policy", POLICY]);
    expect(withOverrides.stdout).toContain("MCP Tool Overrides (2):\n  github__create_issue [sensitivity=internal, direction=outbound]\n  shell [clearance=internal]");
  });

  it("refuses a malformed policy.toml and a bad level", () => {
    const dir = mkdtempSync(join(tmpdir(), "leviath-bad-"));
    const file = join(dir, "policy.toml");
    writeFileSync(file, "[[allowlist]\n");
    const r = leviath(["policy", "add", "shell", "--policy", file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("Failed to parse policy.toml");
    const lvl = leviath(["policy", "add", "shell", "--max-sensitivity", "top", "--policy", file]);
    expect(lvl.status).toBe(2);
    expect(lvl.stderr).toContain("Invalid sensitivity level: 'top'. Use: public, internal, private");
  });
});
