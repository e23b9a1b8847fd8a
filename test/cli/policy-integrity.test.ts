import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";

// `leviath policy test --integrity --provenance` (issue 40) against a LeviathPolicy with integrity on, and against
// upstream's policy.toml, whose output without the flags stays upstream's.
const dir = mkdtempSync(join(tmpdir(), "leviath-policy-integrity-"));
const POLICY = join(dir, "policy.yaml");
writeFileSync(POLICY, [
  "apiVersion: leviath.dev/v1alpha1", "kind: LeviathPolicy", "metadata: {name: cluster}", "spec:",
  "  taint:", "    toolOverrides:", "      bank__send_money: {target: {arguments: [recipient]}, effect: reach}",
  "  integrity:", "    enforce: true", "    allowlist: [{tool: bank__send_money, to: ['GB29*', CH9300762011623852957]}]",
].join("\n"));
const ARGS = (recipient: string) => JSON.stringify({ recipient, amount: 100 });

describe("leviath policy test --integrity", () => {
  it("holds a payment whose recipient came from untrusted text, and says the change", () => {
    const r = leviath(["policy", "test", "bank__send_money", "--args", ARGS("GB29NWBK60161331926819"), "--integrity", "untrusted", "--provenance", "recipient=untrusted", "--taint", "public", "--policy", POLICY]);
    expect(r.status).toBe(0);
    expect(r.stdout.trimEnd().split("\n").slice(-6)).toEqual([
      "Integrity:", "  Effect: reach", "  Context: untrusted", "  Provenance: recipient=untrusted, amount=none",
      "Result: HELD (its argument 'recipient' came from text a third party could have written (entry 'policy-test/untrusted'), and from nothing trusted)",
      "  To allow it: name the value in the task (trusted text), or add an integrity rule that allows it (spec.integrity.rules over args_provenance).",
    ]);
    expect(r.stdout).toContain("Result: HELD (its argument 'recipient' came from text a third party could have written");
  });

  it("allows a payee the allowlist names exactly though it came from untrusted text: the admin vouches for it", () => {
    const r = leviath(["policy", "test", "bank__send_money", "--args", ARGS("CH9300762011623852957"), "--integrity", "untrusted", "--provenance", "recipient=untrusted", "--taint", "public", "--policy", POLICY]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("Result: ALLOWED by integrity allowlist rule #1");
  });

  it("allows the task's payee by the untrusted-context allowlist, in JSON", () => {
    const r = leviath(["policy", "test", "bank__send_money", "--args", ARGS("GB29NWBK60161331926819"), "--integrity", "untrusted", "--provenance", "recipient=trusted", "--policy", POLICY, "--json"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).integrity).toMatchObject({ effect: "reach", context: "untrusted", verdict: { kind: "allowlist", index: 0 }, argsProvenance: { recipient: "trusted" } });
  });

  it("notes that upstream's policy enforces nothing, and refuses a provenance of an argument not given", () => {
    const upstream = repo("test/fixtures/config/policy.toml");
    const r = leviath(["policy", "test", "shell", "--args", JSON.stringify({ command: "ls" }), "--integrity", "untrusted", "--policy", upstream]);
    expect(r.stderr).toContain("spec.integrity.enforce is false");
    expect(r.stdout).toContain("Result: HELD (the context holds text a third party could have written (entry 'policy-test/untrusted'), and 'shell' acts)");
    const bad = leviath(["policy", "test", "shell", "--args", "{}", "--provenance", "command=untrusted", "--policy", upstream]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--provenance names 'command', which is not an argument of --args");
  });

  it("reads [integrity] and an override's effect from policy.toml (ours: an upstream file has neither), and refuses an unknown key", () => {
    const toml = join(dir, "policy.toml");
    writeFileSync(toml, [
      "[integrity]", "enforce = true", "on_hold = 'deny'", "[[integrity.allowlist]]", "tool = 'bank__send_money'", "to = ['GB29NWBK60161331926819']",
      "[[integrity.rules]]", "name = 'known-payee'", "expression = 'args_provenance.recipient == \"trusted\" && args.amount <= 10.0'",
      "[mcp_overrides.bank__send_money]", "target = 'recipient'", "effect = 'reach'",
      "[mcp_overrides.bank__get_balance]", "effect = 'read'", "integrity = 'trusted'", "",
    ].join("\n"));
    const held = leviath(["policy", "test", "bank__send_money", "--args", ARGS("US133000000121212121212"), "--integrity", "untrusted", "--provenance", "recipient=trusted", "--policy", toml, "--json"]);
    expect(held.stderr).toBe("");
    expect(JSON.parse(held.stdout).integrity).toMatchObject({ verdict: { kind: "held", finding: { reason: "untrusted-context" } } });
    const small = leviath(["policy", "test", "bank__send_money", "--args", JSON.stringify({ recipient: "US133000000121212121212", amount: 5 }), "--integrity", "untrusted", "--provenance", "recipient=trusted", "--policy", toml, "--json"]);
    expect(JSON.parse(small.stdout).integrity).toMatchObject({ verdict: { kind: "rule", name: "known-payee" } });
    const read = leviath(["policy", "test", "bank__get_balance", "--args", "{}", "--integrity", "untrusted", "--policy", toml, "--json"]);
    expect(JSON.parse(read.stdout).integrity).toMatchObject({ effect: "read", verdict: { kind: "pass" } });
    writeFileSync(toml, "[integrity]\nenforce = true\nenforced = true\n");
    const bad = leviath(["policy", "test", "shell", "--policy", toml]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("[integrity] has unknown key 'enforced'");
  });

  it("takes --target for a call given without --args, as the taint dry run does", () => {
    const r = leviath(["policy", "test", "bank__send_money", "--target", "GB29NWBK60161331926819", "--integrity", "untrusted", "--policy", POLICY, "--json"]);
    expect(JSON.parse(r.stdout).integrity).toMatchObject({ verdict: { kind: "allowlist", index: 0 } });
    const other = leviath(["policy", "test", "bank__send_money", "--target", "US133000000121212121212", "--integrity", "untrusted", "--policy", POLICY, "--json"]);
    expect(JSON.parse(other.stdout).integrity).toMatchObject({ verdict: { kind: "held", finding: { reason: "untrusted-context", targets: ["US133000000121212121212"] } } });
  });
});
