// No import circle in src/ (issue 39): a module's imports, type-only ones included, never lead back to it. The graph
// is read with the TypeScript compiler's own import scanner (static imports, `export … from` and `import()`), so
// what it sees is what tsc resolves; a circle is a strongly connected component of more than one module, or a module
// that imports itself.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = dirname(fileURLToPath(import.meta.url));

/**
 * Circles known while other branches break them: each entry is the circle's modules, sorted. Delete an entry once
 * its fix is merged (the test fails on an entry that no longer matches a circle, so none outlives its fix).
 */
const KNOWN_CIRCLES: readonly (readonly string[])[] = [
  // Broken by the sandbox exec sweep work.
  ["sidecar/executors/pod-exec-shell.ts", "sidecar/executors/pod-exec-sweep.ts"],
];

/** The product modules of src/ (tests excluded), relative to src/. */
function listModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return listModules(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [relative(SRC, path)] : [];
  });
}

/** Each module's relative imports inside src/, as paths relative to src/. */
function readImportGraph(modules: readonly string[]): Map<string, string[]> {
  const known = new Set(modules);
  return new Map(modules.map((m) => {
    const info = ts.preProcessFile(readFileSync(join(SRC, m), "utf8"), true, true);
    const targets = info.importedFiles
      .map((f) => f.fileName)
      .filter((spec) => spec.startsWith("."))
      .map((spec) => relative(SRC, resolve(SRC, dirname(m), spec)))
      .filter((t) => known.has(t));
    return [m, [...new Set(targets)]];
  }));
}

/** The circles of a graph (Tarjan's strongly connected components of size > 1, and self-imports), each sorted. */
function findCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return circles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

const key = (circle: readonly string[]): string => circle.join(" <-> ");

describe("findCircles", () => {
  it("finds a two-module circle, a longer one and a self-import, and nothing in a tree", () => {
    const graph = new Map([
      ["a", ["b"]], ["b", ["a", "c"]], ["c", []],
      ["d", ["e"]], ["e", ["f"]], ["f", ["d"]],
      ["g", ["g"]],
      ["h", ["c", "i"]], ["i", ["c"]],
    ]);
    expect(findCircles(graph)).toEqual([["a", "b"], ["d", "e", "f"], ["g"]]);
  });
});

describe("src/ import graph", () => {
  const circles = findCircles(readImportGraph(listModules(SRC)));
  const known = new Set(KNOWN_CIRCLES.map(key));

  it("reads the graph (a module with known imports has them)", () => {
    const graph = readImportGraph(listModules(SRC));
    expect(graph.get("sidecar/http/app.ts")).toContain("sidecar/http/tool-call-routes.ts");
  });

  it("has no import circle beyond the known ones", () => {
    expect(circles.map(key).filter((c) => !known.has(c))).toEqual([]);
  });

  it("lists as known only circles that still exist", () => {
    const found = new Set(circles.map(key));
    expect([...known].filter((c) => !found.has(c))).toEqual([]);
  });
});
