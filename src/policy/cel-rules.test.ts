import { describe, expect, it } from "vitest";
import { EMPTY_RULE_SET, MAX_RULE_SOURCE_LENGTH, evaluateRules } from "./cel-rules.ts";
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
