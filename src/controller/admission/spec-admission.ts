// What the operator's validating webhook refuses: the checks the reconcilers make on a spec, run at admission so
// that `kubectl apply` (whatever its --validate) and Helm fail at once, naming the field or entry. Pure, but for
// loading `@bufbuild/cel` (about 24 MiB resident) on the first policy that has rules to check, as the sidecar does.
import { createRequire } from "node:module";
import { ApprovalSpecSchema } from "../../api/approval.ts";
import { KIND } from "../../api/constants.ts";
import { RunSpecSchema } from "../../api/run.ts";
import { compileRulesWith, EMPTY_RULE_SET, type CelLibrary, type CompiledRuleSet, type RuleSource } from "../../policy/cel-rules.ts";
import { validateEntrySyntax } from "../../policy/read-paths/index.ts";
import { buildCanonicalJson } from "../../sandbox/hash.ts";
import { FINDING_CODE } from "../../api/findings.ts";
import { computeAgentStatus } from "../agent/agent-status.ts";
import { formatFieldPath } from "../conditions.ts";
import { computePolicyState } from "../leviath-policy/policy-state.ts";

/** An object as admission sees it. */
export interface AdmittedObject {
  metadata?: { name?: string; namespace?: string };
  spec?: unknown;
}

/** The kinds the webhook checks. */
export type AdmittedKind = (typeof KIND)[keyof typeof KIND];

function firstIssue(schema: { safeParse(v: unknown): { success: true } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } } }, spec: unknown): string | undefined {
  const parsed = schema.safeParse(spec ?? {});
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  return issue ? `${formatFieldPath("spec", issue.path)}: ${issue.message}` : "spec: invalid";
}

function agentProblem(obj: AdmittedObject): string | undefined {
  // The reconciler's own status computation, without a policy: what makes the blueprint unusable whatever the
  // admin grants (schema, name, read-path entry syntax). Policy-dependent refusals stay conditions.
  const status = computeAgentStatus({
    namespace: obj.metadata?.namespace ?? "", name: obj.metadata?.name ?? "", generation: 0,
    spec: structuredClone(obj.spec), policy: { kind: "absent" }, previous: undefined, now: "1970-01-01T00:00:00Z",
  });
  return status.findings?.filter((f) => f.severity === "error" && f.code === FINDING_CODE.blueprintInvalid).map((f) => f.message).join("; ") || undefined;
}

function entryProblem(field: string, entries: readonly string[]): string | undefined {
  for (const [i, raw] of entries.entries()) {
    const checked = validateEntrySyntax(raw);
    if (!checked.ok) return `${field}[${i}]: ${checked.error}`;
  }
  return undefined;
}

let celLibrary: CelLibrary | undefined;

/** The rules compiled as the sidecar compiles them; the library is loaded only when there are rules. */
function compileRules(sources: readonly RuleSource[]): CompiledRuleSet {
  if (sources.length === 0) return EMPTY_RULE_SET;
  celLibrary ??= createRequire(import.meta.url)("@bufbuild/cel") as CelLibrary;
  return compileRulesWith(celLibrary, sources);
}

function policyProblem(obj: AdmittedObject): string | undefined {
  const state = computePolicyState({ spec: obj.spec }, undefined);
  if (state.kind === "invalid") return state.message;
  if (state.kind !== "valid") return undefined;
  const { readPaths, taint } = state.spec;
  const grants = [
    entryProblem("spec.readPaths.global", readPaths.global),
    ...Object.entries(readPaths.perAgent).map(([key, list]) => entryProblem(`spec.readPaths.perAgent["${key}"]`, list)),
  ].find((p) => p !== undefined);
  if (grants) return grants;
  // The sidecar compiles the same rules with the same function; a rule that does not compile would be silently
  // "no opinion" in every Run.
  const { diagnostics } = compileRules(taint.rules.map((r) => ({ name: r.name, source: r.expression })));
  const bad = diagnostics[0];
  if (!bad) return undefined;
  const index = taint.rules.findIndex((r) => r.name === bad.rule);
  return `spec.taint.rules[${index}] (${bad.rule}): ${bad.kind}: ${bad.message}`;
}

/**
 * Why the webhook refuses `obj` of `kind`, or undefined to admit it. An update that leaves the spec as it was is
 * admitted (the controller's metadata writes on an object stored before the webhook existed must not fail).
 */
export function computeAdmissionProblem(kind: string, obj: AdmittedObject, old?: AdmittedObject): string | undefined {
  if (old && buildCanonicalJson(old.spec ?? {}) === buildCanonicalJson(obj.spec ?? {})) return undefined;
  switch (kind) {
    case KIND.agent: return agentProblem(obj);
    case KIND.run: return firstIssue(RunSpecSchema, obj.spec);
    case KIND.policy: return policyProblem(obj);
    case KIND.approval: return firstIssue(ApprovalSpecSchema, obj.spec);
    default: return `kind ${kind} is not one the leviath webhook checks`;
  }
}
