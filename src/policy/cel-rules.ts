// Scripted gate rules in CEL (taint-gate spec §4, DESIGN.md §5). Each rule is one boolean expression
// over `tool`, `target`, `targets`, `taint_level` (lower case) and `args` (the call's arguments as JSON).
// Rules are compiled once and evaluated in name order; only a `true` allows. A compile error, an
// evaluation error or a non-boolean result is "no opinion", reported as a diagnostic and never an allow;
// so is a rule that reads `args` when the call's arguments are not given or are over the bound. The CEL library is a parameter of compilation
// (cel-library.ts binds it): the sidecar loads it (about 27 MiB resident) only for a policy that has rules.
import type * as Cel from "@bufbuild/cel";
import type { Level } from "./levels.ts";

/** A rule as loaded: the file stem and the expression text. */
export interface RuleSource {
  readonly name: string;
  readonly source: string;
}

/** Longest expression we compile; a rule is a short predicate, and size bounds evaluation cost. */
export const MAX_RULE_SOURCE_LENGTH = 4096;

/** Deepest nesting of comprehension macros (`all`, `exists`, `map`, …) we accept: no loops in loops. */
export const MAX_COMPREHENSION_DEPTH = 1;

/** The largest arguments (as JSON, in UTF-16 code units) a rule reading `args` is evaluated on. */
export const MAX_RULE_ARGS_CHARS = 65_536;

/** The deepest nesting of arrays and objects in the arguments a rule reading `args` is evaluated on. */
export const MAX_RULE_ARGS_DEPTH = 32;

/** Why a rule gave no opinion. */
export type RuleDiagnosticKind = "too-long" | "too-complex" | "compile-error" | "eval-error" | "non-boolean" | "args-unavailable";

/** A rule that could not be compiled or gave no opinion on a call. */
export interface RuleDiagnostic {
  readonly rule: string;
  readonly kind: RuleDiagnosticKind;
  readonly message: string;
}

/** What compiling and running rules needs of `@bufbuild/cel`. */
export type CelLibrary = Pick<typeof Cel, "CelScalar" | "celEnv" | "isCelError" | "listType" | "mapType" | "parse" | "plan">;

type Str = typeof Cel.CelScalar.STRING;
type Variables = {
  readonly tool: Str;
  readonly target: Str;
  readonly targets: Cel.CelListType<Str>;
  readonly taint_level: Str;
  readonly args: Cel.CelMapType<Str, typeof Cel.CelScalar.DYN>;
  readonly integrity: Str;
  readonly effect: Str;
  readonly args_provenance: Cel.CelMapType<Str, Str>;
};
type Expr = ReturnType<typeof Cel.parse>["expr"];

/** One compiled rule: its program, and the library's test for an evaluation error (the same copy that made it). */
export interface CompiledRule {
  readonly name: string;
  readonly program: ReturnType<typeof Cel.plan<Variables>>;
  readonly isError: (value: unknown) => value is Cel.CelError;
  /** Whether the expression reads `args` (it then gives no opinion on a call whose arguments are not bound). */
  readonly readsArgs: boolean;
}

/** The environment rules are planned in, one per library copy. */
const environments = new WeakMap<CelLibrary, ReturnType<typeof Cel.celEnv<Variables>>>();

function environmentOf(cel: CelLibrary): ReturnType<typeof Cel.celEnv<Variables>> {
  let env = environments.get(cel);
  if (env === undefined) {
    const str = cel.CelScalar.STRING;
    const variables: Variables = { tool: str, target: str, targets: cel.listType(str), taint_level: str, args: cel.mapType(str, cel.CelScalar.DYN),
      integrity: str, effect: str, args_provenance: cel.mapType(str, str) };
    environments.set(cel, (env = cel.celEnv({ variables })));
  }
  return env;
}

/** The compiled rules in evaluation order, and the ones that failed to compile. */
export interface CompiledRuleSet {
  readonly rules: readonly CompiledRule[];
  readonly diagnostics: readonly RuleDiagnostic[];
}

/** A rule set that never allows anything (no rules directory, no rules). */
export const EMPTY_RULE_SET: CompiledRuleSet = { rules: [], diagnostics: [] };

function children(expr: Expr): Expr[] {
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr": return kind.value.operand ? [kind.value.operand] : [];
    case "callExpr": return [...(kind.value.target ? [kind.value.target] : []), ...kind.value.args];
    case "listExpr": return kind.value.elements;
    case "structExpr": return kind.value.entries.flatMap((e) => [
      ...(e.keyKind.case === "mapKey" ? [e.keyKind.value] : []),
      ...(e.value ? [e.value] : []),
    ]);
    case "comprehensionExpr": {
      const c = kind.value;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].filter((e): e is Expr => e !== undefined);
    }
    // Leaves: a constant, an identifier, or an expression the parser left empty.
    case "constExpr":
    case "identExpr":
    case undefined:
      return [];
    default: {
      const unknown: never = kind;
      throw new Error(`unknown CEL expression kind ${String((unknown as { case?: unknown }).case)}`);
    }
  }
}

/** The deepest nesting of comprehensions in an expression. */
function comprehensionDepth(expr: Expr): number {
  const own = expr.exprKind.case === "comprehensionExpr" ? 1 : 0;
  let deepest = 0;
  for (const child of children(expr)) deepest = Math.max(deepest, comprehensionDepth(child));
  return own + deepest;
}

/** Whether the expression names the identifier anywhere (a comprehension's own variable of that name counts too). */
function referencesIdent(expr: Expr, name: string): boolean {
  if (expr.exprKind.case === "identExpr") return expr.exprKind.value.name === name;
  return children(expr).some((child) => referencesIdent(child, name));
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function compileOne(cel: CelLibrary, rule: RuleSource): CompiledRule | RuleDiagnostic {
  if (rule.source.length > MAX_RULE_SOURCE_LENGTH) {
    return { rule: rule.name, kind: "too-long", message: `expression is ${rule.source.length} characters, over the ${MAX_RULE_SOURCE_LENGTH} limit` };
  }
  try {
    const parsed = cel.parse(rule.source);
    if (comprehensionDepth(parsed.expr) > MAX_COMPREHENSION_DEPTH) {
      return { rule: rule.name, kind: "too-complex", message: `comprehensions nest deeper than ${MAX_COMPREHENSION_DEPTH}` };
    }
    return { name: rule.name, program: cel.plan(environmentOf(cel), parsed), isError: cel.isCelError, readsArgs: referencesIdent(parsed.expr, "args") };
  } catch (error) {
    // The parser throws on a syntax error (and a stack overflow on absurd nesting is the same to us).
    return { rule: rule.name, kind: "compile-error", message: errorText(error) };
  }
}

/** The order rules are evaluated (and listed) in: by name, code unit by code unit. */
export function compareRuleNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Compiles rules once, sorted by name, with the CEL library `cel`. */
export function compileRulesWith(cel: CelLibrary, sources: readonly RuleSource[]): CompiledRuleSet {
  const sorted = [...sources].sort((a, b) => compareRuleNames(a.name, b.name));
  const rules: CompiledRule[] = [];
  const diagnostics: RuleDiagnostic[] = [];
  for (const source of sorted) {
    const compiled = compileOne(cel, source);
    if ("program" in compiled) rules.push(compiled);
    else diagnostics.push(compiled);
  }
  return { rules, diagnostics };
}

/** What a rule sees about a call. */
export interface RuleCall {
  readonly tool: string;
  /** Undefined (no target, or several) is bound as "". */
  readonly target?: string | undefined;
  /** Every target of the call; when absent, the single `target` if there is one. */
  readonly targets?: readonly string[] | undefined;
  readonly taint: Level;
  /** The call's arguments (decoded JSON); undefined when not known, and then a rule reading `args` gives no opinion. */
  readonly args?: Readonly<Record<string, unknown>> | undefined;
  /** The context's integrity (trusted when not given: the integrity gate is off or did not look). */
  readonly integrity?: string | undefined;
  /** The tool's effect (read, own, reach), "" when not given. */
  readonly effect?: string | undefined;
  /** Each argument's provenance (trusted, untrusted, none), empty when not computed. */
  readonly argsProvenance?: Readonly<Record<string, string>> | undefined;
}

/** The first rule returning `true` (by name), and every rule that gave no opinion because it failed. */
export interface RuleEvaluation {
  readonly match: string | undefined;
  readonly diagnostics: readonly RuleDiagnostic[];
}

interface Bindings {
  readonly tool: string;
  readonly target: string;
  readonly targets: readonly string[];
  readonly taint_level: string;
  readonly args: Cel.CelInput<Variables["args"]>;
  readonly integrity: string;
  readonly effect: string;
  readonly args_provenance: Readonly<Record<string, string>>;
}

/** Whether a JSON value nests arrays and objects deeper than `max` (iteratively: the value may be hostile). */
function isDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth >= max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** Why the call's arguments cannot be bound as `args`, or undefined when they can. */
function checkArgs(args: Readonly<Record<string, unknown>> | undefined): string | undefined {
  if (args === undefined) return "the call's arguments are not known here";
  let json: string | undefined;
  try {
    json = JSON.stringify(args);
  } catch {
    json = undefined;
  }
  if (json === undefined) return "the call's arguments are not JSON";
  if (json.length > MAX_RULE_ARGS_CHARS) return `the call's arguments are ${json.length} characters as JSON, over the ${MAX_RULE_ARGS_CHARS} bound`;
  if (isDeeperThan(args, MAX_RULE_ARGS_DEPTH)) return `the call's arguments nest deeper than ${MAX_RULE_ARGS_DEPTH}`;
  return undefined;
}

/** Decoded JSON is a CEL input as it is: numbers are doubles, arrays lists, objects maps with string keys. */
function asCelInput(args: Readonly<Record<string, unknown>>): Cel.CelInput<Variables["args"]> {
  return args as Cel.CelInput<Variables["args"]>;
}

function runOne(rule: CompiledRule, bindings: Bindings): boolean | RuleDiagnostic {
  let value: unknown;
  try {
    value = rule.program(bindings);
  } catch (error) {
    return { rule: rule.name, kind: "eval-error", message: errorText(error) };
  }
  if (rule.isError(value)) return { rule: rule.name, kind: "eval-error", message: value.message };
  if (typeof value !== "boolean") return { rule: rule.name, kind: "non-boolean", message: `result is ${typeof value}, not bool` };
  return value;
}

/** The integrity variables: trusted, no effect and no provenance when the integrity gate did not look. */
function bindIntegrity(call: RuleCall): Pick<Bindings, "integrity" | "effect" | "args_provenance"> {
  return { integrity: call.integrity ?? "trusted", effect: call.effect ?? "", args_provenance: call.argsProvenance ?? {} };
}

/** Evaluates the compiled rules in order; the first `true` wins, everything else is no opinion. */
export function evaluateRules(set: CompiledRuleSet, call: RuleCall): RuleEvaluation {
  const targets = call.targets ?? (call.target === undefined ? [] : [call.target]);
  // Checked once, and only if some rule reads them: most policies never pay for serialising the arguments.
  const argsProblem = set.rules.some((r) => r.readsArgs) ? checkArgs(call.args) : undefined;
  const bindings: Bindings = {
    tool: call.tool, target: call.target ?? (targets.length === 1 ? targets[0]! : ""), targets, taint_level: call.taint, args: argsProblem === undefined ? asCelInput(call.args ?? {}) : {},
    ...bindIntegrity(call),
  };
  const diagnostics: RuleDiagnostic[] = [];
  for (const rule of set.rules) {
    if (rule.readsArgs && argsProblem !== undefined) {
      diagnostics.push({ rule: rule.name, kind: "args-unavailable", message: argsProblem });
      continue;
    }
    const result = runOne(rule, bindings);
    if (result === true) return { match: rule.name, diagnostics };
    if (result !== false) diagnostics.push(result);
  }
  return { match: undefined, diagnostics };
}
