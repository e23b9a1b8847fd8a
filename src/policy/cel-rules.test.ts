import { describe, expect, it } from "vitest";
import { EMPTY_RULE_SET, MAX_RULE_ARGS_CHARS, MAX_RULE_ARGS_DEPTH, MAX_RULE_SOURCE_LENGTH, evaluateRules } from "./cel-rules.ts";
import { compileRules } from "./cel-library.ts";

describe("compileRules", () => {
  it("sorts by name and reports rules that do not compile", () => {
    const set = compileRules([
      { name: "zeta", source: `tool == "shell"` },
      { name: "broken", source: `tool == ` },
      { name: "alpha", source: `taint_level == "internal"` },
    ]);
    expect(set.rules.map((r) => r.name)).toEqual(["alpha", "zeta"]);
    expect(set.diagnostics).toHaveLength(1);
    expect(set.diagnostics[0]).toMatchObject({ rule: "broken", kind: "compile-error" });
  });

  it("refuses an over-long expression", () => {
    const set = compileRules([{ name: "long", source: `tool == "${"x".repeat(MAX_RULE_SOURCE_LENGTH)}"` }]);
    expect(set.rules).toEqual([]);
    expect(set.diagnostics[0]).toMatchObject({ rule: "long", kind: "too-long" });
  });

  it("refuses nested comprehensions but accepts one", () => {
    const set = compileRules([
      { name: "nested", source: `[1,2].all(x, [3,4].exists(y, y > x))` },
      { name: "flat", source: `["a@corp", "b@corp"].exists(r, r == target)` },
    ]);
    expect(set.rules.map((r) => r.name)).toEqual(["flat"]);
    expect(set.diagnostics[0]).toMatchObject({ rule: "nested", kind: "too-complex" });
  });
});

describe("evaluateRules", () => {
  const call = { tool: "send_email", target: "ops@corp", taint: "internal" as const };

  it.each([
    [`tool == "send_email"`, true],
    [`tool == "shell"`, false],
    [`taint_level == "internal" && target == "ops@corp"`, true],
    [`taint_level == "Internal"`, false],
    [`target.endsWith("@corp")`, true],
    [`target.startsWith("ops") && size(tool) == 10`, true],
    [`target.matches("^[a-z]+@corp$")`, true],
  ])("%s -> %s", (source, want) => {
    const got = evaluateRules(compileRules([{ name: "r", source }]), call);
    expect(got.match).toBe(want ? "r" : undefined);
    expect(got.diagnostics).toEqual([]);
  });

  it("binds a missing target as the empty string", () => {
    const set = compileRules([{ name: "none", source: `target == ""` }]);
    expect(evaluateRules(set, { tool: "shell", taint: "private" }).match).toBe("none");
    expect(evaluateRules(set, { tool: "shell", taint: "private", target: "x" }).match).toBeUndefined();
  });

  it("errors and non-booleans are no opinion, reported, never an allow", () => {
    const set = compileRules([
      { name: "a-div", source: `1 / 0 == 1` },
      { name: "b-unknown-var", source: `clearance == "public"` },
      { name: "c-unknown-func", source: `launch(tool)` },
      { name: "d-string", source: `tool` },
      { name: "e-int", source: `size(tool)` },
      { name: "f-false", source: `false` },
    ]);
    const got = evaluateRules(set, call);
    expect(got.match).toBeUndefined();
    expect(got.diagnostics.map((d) => [d.rule, d.kind])).toEqual([
      ["a-div", "eval-error"],
      ["b-unknown-var", "eval-error"],
      ["c-unknown-func", "eval-error"],
      ["d-string", "non-boolean"],
      ["e-int", "non-boolean"],
    ]);
  });

  it("the first true by file name wins, even when a later one also matches", () => {
    const set = compileRules([
      { name: "company", source: `target.endsWith("@corp")` },
      { name: "00-broken", source: `nope(` },
      { name: "any-send", source: `tool == "send_email"` },
      { name: "b-error", source: `1 / 0 == 0` },
    ]);
    const got = evaluateRules(set, call);
    expect(got.match).toBe("any-send");
    expect(set.diagnostics.map((d) => d.rule)).toEqual(["00-broken"]);
  });

  it("an error before the match is reported alongside it", () => {
    const set = compileRules([{ name: "a", source: `1 / 0 == 0` }, { name: "b", source: `true` }]);
    const got = evaluateRules(set, call);
    expect(got.match).toBe("b");
    expect(got.diagnostics.map((d) => d.rule)).toEqual(["a"]);
  });

  it("compiles once and evaluates many", () => {
    const set = compileRules([{ name: "shell-public", source: `tool == "shell" && taint_level == "public"` }]);
    expect(evaluateRules(set, { tool: "shell", taint: "public" }).match).toBe("shell-public");
    expect(evaluateRules(set, { tool: "shell", taint: "private" }).match).toBeUndefined();
    expect(evaluateRules(set, { tool: "bash", taint: "public" }).match).toBeUndefined();
  });

  it("an empty set never allows", () => {
    expect(evaluateRules(EMPTY_RULE_SET, call)).toEqual({ match: undefined, diagnostics: [] });
  });
});

describe("evaluateRules: targets and args", () => {
  const pay = { tool: "bank__send_money", target: "GB29NWBK60161331926819", taint: "private" as const, args: { recipient: "GB29NWBK60161331926819", amount: 98.7, subject: "Rent", recurring: false, tags: ["home"] } };
  const payees = `["GB29NWBK60161331926819", "SE3550000000054910000003"]`;

  it.each([
    [`tool == "bank__send_money" && target in ${payees} && args.amount <= 2500`, true],
    [`args.amount < 50`, false],
    [`args.amount == 98.7 && args.subject == "Rent" && !args.recurring`, true],
    [`has(args.recipient) && !has(args.date)`, true],
    [`args.tags.exists(t, t == "home")`, true],
    [`type(args.amount) == double && int(args.amount) == 98`, true],
    [`size(targets) == 1 && targets[0] == target`, true],
  ])("%s -> %s", (source, want) => {
    const got = evaluateRules(compileRules([{ name: "r", source }]), pay);
    expect(got.diagnostics).toEqual([]);
    expect(got.match).toBe(want ? "r" : undefined);
  });

  it("a missing argument is an evaluation error: no opinion", () => {
    const got = evaluateRules(compileRules([{ name: "r", source: `args.date == "2022-01-01"` }]), pay);
    expect(got.match).toBeUndefined();
    expect(got.diagnostics.map((d) => d.kind)).toEqual(["eval-error"]);
  });

  it("sees every target of a call with several, and no single target", () => {
    const set = compileRules([
      { name: "a-single", source: `target.endsWith("@corp")` },
      { name: "b-all", source: `size(targets) > 0 && targets.all(t, t.endsWith("@corp"))` },
    ]);
    expect(evaluateRules(set, { tool: "mail__send", targets: ["a@corp", "b@corp"], taint: "private", args: {} }).match).toBe("b-all");
    expect(evaluateRules(set, { tool: "mail__send", targets: ["a@corp", "x@evil"], taint: "private", args: {} }).match).toBeUndefined();
  });

  it("a rule reading args gives no opinion when the arguments are not known; the others still run", () => {
    const set = compileRules([{ name: "a-args", source: `!has(args.recipient)` }, { name: "b-plain", source: `tool == "x"` }]);
    const got = evaluateRules(set, { tool: "x", taint: "private" });
    expect(got.match).toBe("b-plain");
    expect(got.diagnostics).toEqual([{ rule: "a-args", kind: "args-unavailable", message: "the call's arguments are not known here" }]);
  });

  it("a rule reading args gives no opinion on arguments over the size bound, however they read", () => {
    const set = compileRules([{ name: "no-recipient", source: `!has(args.recipient)` }]);
    const small = evaluateRules(set, { tool: "x", taint: "private", args: { body: "hi" } });
    expect(small.match).toBe("no-recipient");
    const big = evaluateRules(set, { tool: "x", taint: "private", args: { body: "x".repeat(MAX_RULE_ARGS_CHARS) } });
    expect(big.match).toBeUndefined();
    expect(big.diagnostics[0]).toMatchObject({ rule: "no-recipient", kind: "args-unavailable" });
    expect(big.diagnostics[0]!.message).toContain(`over the ${MAX_RULE_ARGS_CHARS} bound`);
  });

  it("a rule reading args gives no opinion on arguments nested past the depth bound", () => {
    let deep: unknown = "x";
    for (let i = 0; i < MAX_RULE_ARGS_DEPTH; i++) deep = [deep];
    const set = compileRules([{ name: "r", source: `!has(args.recipient)` }]);
    const got = evaluateRules(set, { tool: "x", taint: "private", args: { deep } });
    expect(got.match).toBeUndefined();
    expect(got.diagnostics[0]).toMatchObject({ kind: "args-unavailable", message: `the call's arguments nest deeper than ${MAX_RULE_ARGS_DEPTH}` });
  });

  it("rules that never read args are not held up by arguments over the bound", () => {
    const set = compileRules([{ name: "r", source: `tool == "x"` }]);
    expect(evaluateRules(set, { tool: "x", taint: "private", args: { body: "x".repeat(MAX_RULE_ARGS_CHARS) } })).toEqual({ match: "r", diagnostics: [] });
  });
});

