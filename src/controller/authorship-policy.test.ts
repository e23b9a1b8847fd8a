import { describe, expect, it } from "vitest";
import { createLogger } from "../log/logger.ts";
import { decideAuthorshipPolicy, reportAuthorshipPolicy, type AdmissionRead } from "./authorship-policy.ts";

const NAME = "r-leviath-operator-authorship";
const policy: AdmissionRead = { found: { spec: {} } };
const binding = (spec: Record<string, unknown>): AdmissionRead => ({ found: { spec } });
const bound = binding({ policyName: NAME, validationActions: ["Deny"] });

/** A logger whose lines are kept, parsed. */
function capture() {
  const lines: { level: string; msg: string; warmPools: boolean }[] = [];
  const log = createLogger("info", { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) });
  return { log, lines };
}

describe("decideAuthorshipPolicy", () => {
  it("is in force when the policy exists and its binding of the same name denies", () => {
    expect(decideAuthorshipPolicy(NAME, policy, bound)).toEqual({ inForce: true, message: `the authorship admission policy ${NAME} is in force: only the operator sets the marks it recognises its objects by` });
  });

  it.each([
    ["policy missing (or a cluster before 1.30)", { missing: true } as const, bound, "no ValidatingAdmissionPolicy of that name"],
    ["policy unreadable", { error: "forbidden" }, bound, "reading the ValidatingAdmissionPolicy failed: forbidden"],
    ["binding missing", policy, { missing: true } as const, "no ValidatingAdmissionPolicyBinding of that name"],
    ["binding unreadable", policy, { error: "timeout" }, "reading the ValidatingAdmissionPolicyBinding failed: timeout"],
    ["binding of another policy", policy, binding({ policyName: "other", validationActions: ["Deny"] }), 'its binding binds "other"'],
    ["binding that only warns", policy, binding({ policyName: NAME, validationActions: ["Warn", "Audit"] }), "its binding does not deny"],
  ])("is not in force with the %s, and says why", (_, p, b, why) => {
    const state = decideAuthorshipPolicy(NAME, p, b);
    expect(state.inForce).toBe(false);
    expect(state.message).toContain(`the authorship admission policy ${NAME} is not in force (${why})`);
  });
});

describe("reportAuthorshipPolicy", () => {
  it("keeps warm pools on while the policy is in force, and says so at info", () => {
    const { log, lines } = capture();
    expect(reportAuthorshipPolicy(log, decideAuthorshipPolicy(NAME, policy, bound), true)).toBe(true);
    expect(lines.map((l) => [l.level, l.warmPools])).toEqual([["info", true]]);
  });

  it("turns warm pools off, as an error naming why, when it is not", () => {
    const { log, lines } = capture();
    expect(reportAuthorshipPolicy(log, decideAuthorshipPolicy(NAME, { missing: true }, bound), true)).toBe(false);
    expect(lines.map((l) => l.level)).toEqual(["error"]);
    expect(lines[0]!.msg).toContain("warm pools stay off");
  });

  it("checks nothing, as a warning, when no policy is named, and leaves warm pools as asked", () => {
    const { log, lines } = capture();
    expect(reportAuthorshipPolicy(log, undefined, true)).toBe(true);
    expect(reportAuthorshipPolicy(log, undefined, false)).toBe(false);
    expect(lines.map((l) => [l.level, l.msg])).toEqual(["warn", "warn"].map((level) => [level, "no --authorship-policy: nothing checks that only the operator sets the marks it recognises its objects by"]));
  });
});
