// The refusal table and the decision-source table are the one home of their names (issue 39, part 4): outside
// them, a refusal code or a decision source appears in src/ only where the compiler checks it against the table (an
// argument of `buildRefusalMessage`, a field typed `RefusalCode` or `DecisionSourceName`, a `satisfies`). A name
// spelled where any string would do (a plain `const`, a `string` field, a comparison with an untyped value) is a
// leak: the table could change under it unseen. The check reads src/ with the compiler's type checker and asks, for
// each string literal that spells such a name, which type its position expects.
import { readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { DECISION_SOURCES } from "./decision-sources.ts";
import { REFUSALS } from "./sidecar-contract.ts";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The tables themselves. */
const TABLES = new Set(["api/sidecar-contract.ts", "api/decision-sources.ts"]);
const NAMES = new Set<string>([...Object.keys(REFUSALS), ...Object.keys(DECISION_SOURCES)]);
/** Literals that spell a table's name but mean another thing, by file (read, and listed so a new one is seen). */
const OTHER_MEANINGS: Readonly<Record<string, readonly string[]>> = {
  // A transition's condition (the model's choice), not the decision source of the move it makes.
  "policy/stage-transitions.ts": ["llm_choice"],
  "sidecar/mcp/mcp-stage.ts": ["llm_choice"],
  // Keys of the blueprint's and config.toml's tables.
  "config/blueprint-toml.ts": ["safe_commands", "runtime", "blueprint"],
  "config/config-toml.ts": ["safe_commands"],
  "config/upstream-config-keys.ts": ["safe_commands"],
  // A folder's name.
  "cli/sidecar-pool.ts": ["blueprint"],
  // The executor kind of the tools the runtime runs itself (and a span's `leviath.executed_by` saying it).
  "sidecar/core/enforcement.ts": ["runtime"],
  "sidecar/core/call-spans.ts": ["runtime"],
};

function listModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return listModules(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [path] : [];
  });
}

/**
 * The type a literal's position expects: the other side of a comparison, the switch's subject for a `case`, else the
 * contextual type (undefined: none, as in a plain `const`).
 */
function expectedType(checker: ts.TypeChecker, node: ts.Expression): ts.Type | undefined {
  const parent = node.parent;
  if (ts.isBinaryExpression(parent) && COMPARISONS.has(parent.operatorToken.kind)) {
    return checker.getTypeAtLocation(parent.left === node ? parent.right : parent.left);
  }
  if (ts.isCaseClause(parent)) return checker.getTypeAtLocation(parent.parent.parent.expression);
  return checker.getContextualType(node);
}

const COMPARISONS = new Set([ts.SyntaxKind.EqualsEqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsEqualsToken, ts.SyntaxKind.EqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsToken]);

/** A position that accepts any string (or expects no type at all): a name there is checked against nothing. */
function acceptsAnyString(checker: ts.TypeChecker, node: ts.Expression): boolean {
  const expected = expectedType(checker, node);
  if (expected === undefined) return true;
  const constraint = checker.getBaseConstraintOfType(expected) ?? expected;
  return checker.isTypeAssignableTo(checker.getStringType(), constraint);
}

/** Is the literal a type (`type X = "a" | "b"`), an import path, or a key (`{ "a-b": … }`): not a use of a name. */
function isNotAUse(node: ts.Node): boolean {
  const parent = node.parent;
  return ts.isLiteralTypeNode(parent) || ts.isImportDeclaration(parent) || ts.isExportDeclaration(parent)
    || (ts.isPropertyAssignment(parent) && parent.name === node) || ts.isElementAccessExpression(parent);
}

/** Every use of a table's name in src/ outside the tables, where the position does not check it: `file:line name`. */
function findLeaks(): string[] {
  const files = listModules(SRC);
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2023, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true, allowImportingTsExtensions: true, noEmit: true, skipLibCheck: true, types: ["node"],
  });
  const checker = program.getTypeChecker();
  const leaks: string[] = [];
  for (const file of files) {
    const at = relative(SRC, file);
    if (TABLES.has(at)) continue;
    const source = program.getSourceFile(file)!;
    const visit = (node: ts.Node): void => {
      if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && NAMES.has(node.text) && !OTHER_MEANINGS[at]?.includes(node.text)
        && !isNotAUse(node) && acceptsAnyString(checker, node)) {
        leaks.push(`${at}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${node.text}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return leaks;
}

describe("the refusal and decision-source tables", () => {
  it("are the only place a refusal code or a decision source is spelled unchecked", { timeout: 120_000 }, () => {
    expect(findLeaks().join("\n")).toBe("");
  });
});
