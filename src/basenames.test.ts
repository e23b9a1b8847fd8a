// One name, one thing (issue 39): no two product modules of src/ (tests excluded) share a basename, so a name found
// in a stack trace, an import or a doc says which file it is. The one exception is a resource's type in api/ beside
// its command in cli/, listed below.
import { readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = dirname(fileURLToPath(import.meta.url));

/**
 * Basenames two modules may share, each with the exact pair that holds it. Only a resource's type in api/ and the
 * `leviath` command of the same name in cli/; the test fails on an entry no longer matched, so none outlives its pair.
 */
const ALLOWED_PAIRS: readonly (readonly string[])[] = [
  // The Agent CRD's schema, and `leviath agent` (the reference runtime's command, named as the command is).
  ["api/agent.ts", "cli/agent.ts"],
];

/** The product modules of src/ (tests excluded), relative to src/. */
function listModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return listModules(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [relative(SRC, path)] : [];
  });
}

/** The basenames held by more than one module, each with its modules, sorted. */
function findSharedBasenames(modules: readonly string[]): string[][] {
  const byName = new Map<string, string[]>();
  for (const m of modules) {
    const name = m.split("/").at(-1)!;
    byName.set(name, [...(byName.get(name) ?? []), m]);
  }
  return [...byName.values()].filter((ms) => ms.length > 1).map((ms) => [...ms].sort());
}

const key = (modules: readonly string[]): string => modules.join(" + ");

describe("module basenames in src/", () => {
  it("finds a shared basename, wherever the modules are", () => {
    expect(findSharedBasenames(["a/run-status.ts", "b/c/run-status.ts", "a/other.ts"])).toEqual([["a/run-status.ts", "b/c/run-status.ts"]]);
    expect(findSharedBasenames(["a/x.ts", "b/y.ts"])).toEqual([]);
  });

  it("no two product modules share a basename, but the allowed api/ and cli/ pairs", () => {
    const modules = listModules(SRC);
    expect(modules.length).toBeGreaterThan(100);
    const shared = findSharedBasenames(modules).map(key);
    expect(shared.filter((s) => !ALLOWED_PAIRS.some((p) => key(p) === s))).toEqual([]);
  });

  it("every allowed pair still exists (drop an entry once its pair is renamed)", () => {
    const shared = new Set(findSharedBasenames(listModules(SRC)).map(key));
    expect(ALLOWED_PAIRS.map(key).filter((p) => !shared.has(p))).toEqual([]);
  });
});
