import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { canonicalizeForMatch, type PathFs } from "./canonicalize.ts";
import { compileReadPathSet } from "./compile.ts";
import { decide, type ReadPathPolicy } from "./decide.ts";

const realFs: PathFs = { realpath: (p) => fs.realpathSync.native(p) };

// The temp root is canonicalized: os.tmpdir() may itself be a symlink (macOS /tmp).
let T = "";

beforeAll(() => {
  T = fs.realpathSync.native(fs.mkdtempSync(path.join(os.tmpdir(), "read-paths-decide-")));
  for (const dir of ["data/runs/r1", "data/runs-old", "etc", "outside", "realhome/docs"]) fs.mkdirSync(path.join(T, dir), { recursive: true });
  for (const file of ["data/runs/r1/log.txt", "data/runs-old/1", "data/report.txt", "etc/secret", "realhome/docs/a.md"]) {
    fs.writeFileSync(path.join(T, file), "x");
  }
  fs.symlinkSync(path.join(T, "etc/secret"), path.join(T, "data/runs/link-out")); // inside a granted tree, pointing out
  fs.symlinkSync(path.join(T, "data/runs/r1/log.txt"), path.join(T, "outside/link-in")); // outside, pointing in
  fs.symlinkSync(path.join(T, "nowhere"), path.join(T, "data/runs/dangling"));
  fs.symlinkSync(path.join(T, "data/runs/loop2"), path.join(T, "data/runs/loop1"));
  fs.symlinkSync(path.join(T, "data/runs/loop1"), path.join(T, "data/runs/loop2"));
  fs.symlinkSync(path.join(T, "data/runs"), path.join(T, "rootlink"));
  fs.symlinkSync(path.join(T, "realhome"), path.join(T, "homelink"));
});

afterAll(() => {
  fs.rmSync(T, { recursive: true, force: true });
});

function policy(declared: string[], granted: string[], override = false, home = "/nonexistent-home"): ReadPathPolicy {
  const ctx = { workdir: path.join(T, "work"), home };
  const d = compileReadPathSet(declared, ctx);
  const g = compileReadPathSet(granted, ctx);
  if (!d.ok || !g.ok) throw new Error(`entries did not compile: ${JSON.stringify([d, g])}`);
  return { agentName: "tester", declared: d.value, granted: g.value, allowBlueprintReadPaths: override };
}

/** Decide on the real path of `rel` (under T), the way the resolver does. */
function decideAt(p: ReadPathPolicy, rel: string): string {
  const canonical = canonicalizeForMatch(path.join(T, rel), realFs);
  if (canonical === null) throw new Error(`${rel} cannot be canonicalized`);
  return decide(p, canonical, realFs);
}

const both = (entry: string): ReadPathPolicy => policy([entry], [entry]);

describe("exact entries: subtree containment of the canonical root", () => {
  it("grants the root and its subtree, by whole components (exact-002..004)", () => {
    const p = both(`${T}/data/runs`);
    expect(decideAt(p, "data/runs")).toBe("Allowed");
    expect(decideAt(p, "data/runs/r1/log.txt")).toBe("Allowed");
    expect(decideAt(p, "data/runs-old/1")).toBe("NotDeclared");
    expect(decideAt(p, "data")).toBe("NotDeclared");
  });

  it("ignores trailing slashes on the entry (exact-007)", () => {
    expect(decideAt(both(`${T}/data/runs/`), "data/runs/r1")).toBe("Allowed");
  });

  it("grants a file root and anything 'under' it (exact-010, exact-011)", () => {
    const p = both(`${T}/data/report.txt`);
    expect(decideAt(p, "data/report.txt")).toBe("Allowed");
    expect(decideAt(p, "data/report.txt/x")).toBe("Allowed");
  });

  it("lets the kernel resolve .. in the root", () => {
    expect(decideAt(both(`${T}/data/runs/../runs-old`), "data/runs-old/1")).toBe("Allowed");
  });

  it("grants a symlinked root's target subtree (exact-012, exact-013)", () => {
    expect(decideAt(both(`${T}/rootlink`), "data/runs/r1/log.txt")).toBe("Allowed");
  });

  it("matches nothing while the root is missing, and starts working once it exists (exact-006)", () => {
    const p = both(`${T}/later`);
    const target = path.join(T, "later/f");
    expect(decide(p, target, realFs)).toBe("NotDeclared");
    fs.mkdirSync(path.join(T, "later"));
    expect(decide(p, target, realFs)).toBe("Allowed");
  });

  it("never resolves a relative root (an empty or relative home)", () => {
    // With LEVIATH_HOME="" the root is a relative path that would resolve against the process's cwd.
    const entry = `~/${path.relative(process.cwd(), path.join(T, "data"))}`;
    const p = policy([entry], [entry], false, "");
    expect(p.declared.entries[0]).toMatchObject({ kind: "exact", root: path.relative(process.cwd(), path.join(T, "data")) });
    expect(decide(p, path.join(T, "data/runs"), realFs)).toBe("NotDeclared");
  });

  it("resolves relative entries against the workdir (exact-014)", () => {
    fs.mkdirSync(path.join(T, "work"), { recursive: true });
    expect(decideAt(both("../data/runs"), "data/runs/r1/log.txt")).toBe("Allowed");
  });
});

describe("the double check", () => {
  it("refuses what is declared but not granted, and lets the grant name it differently", () => {
    expect(decideAt(policy([`glob:${T}/data/**`], []), "data/runs/r1")).toBe("NotGranted");
    expect(decideAt(policy([`glob:${T}/data/**`], [`glob:${T}/other/**`]), "data/runs/r1")).toBe("NotGranted");
    expect(decideAt(policy([`${T}/data`], [`regex:${T}/data/runs/.*`]), "data/runs/r1")).toBe("Allowed"); // policy-012
  });

  it("lets a broad grant cover a narrow declaration, and a narrow grant only its part (policy-003..005)", () => {
    expect(decideAt(policy([`glob:${T}/data/runs/**`], [`glob:${T}/data/**`]), "data/runs/r1")).toBe("Allowed");
    const narrow = policy([`glob:${T}/data/**`], [`glob:${T}/data/runs/**`]);
    expect(decideAt(narrow, "data/runs/r1")).toBe("Allowed");
    expect(decideAt(narrow, "data/runs-old/1")).toBe("NotGranted");
  });

  it("reports NotDeclared even for a granted path (policy-002)", () => {
    expect(decideAt(policy([`${T}/etc`], [`${T}/data`]), "data/runs/r1")).toBe("NotDeclared");
  });

  it("lets the override replace the grant, never the declaration", () => {
    const p = policy([`glob:${T}/data/**`], [], true);
    expect(decideAt(p, "data/runs/r1")).toBe("Allowed");
    expect(decideAt(p, "etc/secret")).toBe("NotDeclared");
  });

  it("does not let glob dir/** match dir itself (glob-004)", () => {
    const p = both(`glob:${T}/data/runs/**`);
    expect(decideAt(p, "data/runs")).toBe("NotDeclared");
    expect(decideAt(p, "data/runs/r1")).toBe("Allowed");
  });
});

describe("symlinks: only the real path counts", () => {
  const shapes: Record<string, () => string> = {
    exact: () => `${T}/data/runs`,
    glob: () => `glob:${T}/data/runs/**`,
    regex: () => `regex:${T}/data/runs/.*`,
  };

  it.each(Object.keys(shapes))("refuses a link inside a granted %s entry pointing out (sym-001, glob-028, regex-016)", (shape) => {
    const p = both((shapes[shape] as () => string)());
    expect(decideAt(p, "data/runs/r1/log.txt")).toBe("Allowed");
    expect(decideAt(p, "data/runs/link-out")).toBe("NotDeclared");
  });

  it("allows a link outside pointing into a granted tree (sym-002)", () => {
    expect(decideAt(both(`${T}/data/runs`), "outside/link-in")).toBe("Allowed");
  });

  it("allows a dangling link and a loop under a granted dir by their own names (sym-004, sym-007)", () => {
    const p = both(`glob:${T}/data/runs/**`);
    expect(canonicalizeForMatch(path.join(T, "data/runs/dangling"), realFs)).toBe(path.join(T, "data/runs/dangling"));
    expect(decideAt(p, "data/runs/dangling")).toBe("Allowed");
    expect(decideAt(p, "data/runs/loop1")).toBe("Allowed");
  });

  it("allows files that do not exist yet under a granted root (exact-018, exact-019)", () => {
    const p = both(`${T}/data/runs`);
    expect(decideAt(p, "data/runs/new.txt")).toBe("Allowed");
    expect(decideAt(p, "data/runs/a/b/c.txt")).toBe("Allowed");
  });

  it("never matches tilde globs through a symlinked home, while tilde exact entries do (glob-030, glob-031)", () => {
    const home = path.join(T, "homelink");
    expect(decideAt(policy(["glob:~/docs/**"], ["glob:~/docs/**"], false, home), "realhome/docs/a.md")).toBe("NotDeclared");
    expect(decideAt(policy(["~/docs"], ["~/docs"], false, home), "realhome/docs/a.md")).toBe("Allowed");
  });
});

describe("canonicalizeForMatch", () => {
  it("walks up to the deepest real ancestor and re-appends the tail", () => {
    expect(canonicalizeForMatch(path.join(T, "rootlink/r1/missing/x"), realFs)).toBe(path.join(T, "data/runs/r1/missing/x"));
    expect(canonicalizeForMatch(`${T}/data//runs/./r1/`, realFs)).toBe(path.join(T, "data/runs/r1"));
    expect(canonicalizeForMatch("/", realFs)).toBe("/");
  });

  it("never resolves a relative path", () => {
    expect(canonicalizeForMatch("data/runs", realFs)).toBeNull();
  });

  it("gives up when nothing resolves", () => {
    const broken: PathFs = {
      realpath: () => {
        throw new Error("EIO");
      },
    };
    expect(canonicalizeForMatch(path.join(T, "data"), broken)).toBeNull();
  });
});

describe("one decision's work is shared across entries, never across decisions", () => {
  it("realpaths each exact root once per decision, even when both sets name it, and again at the next decision", () => {
    const calls: string[] = [];
    const countingFs: PathFs = { realpath: (p) => (calls.push(p), realFs.realpath(p)) };
    const root = `${T}/data/runs`;
    const p = policy([root, `${T}/etc`, root], [`${T}/etc`, root]);
    const target = path.join(T, "data/runs/r1/log.txt");
    expect(decide(p, target, countingFs)).toBe("Allowed");
    expect(calls.filter((c) => c === root)).toHaveLength(1);
    expect(calls.filter((c) => c === `${T}/etc`)).toHaveLength(1);
    calls.length = 0;
    expect(decide(p, target, countingFs)).toBe("Allowed");
    expect(calls.filter((c) => c === root)).toHaveLength(1);
  });

  it("matches globs and regexes on a path's UTF-8 bytes exactly as on the string, non-ASCII included", () => {
    const entries = [`glob:${T}/données/?/*.txt`, `glob:${T}/données/**`, `regex:${T}/d.nn.es/[^/]/\\w+\\.txt`, `regex:${T}/\\x{e9}t\\x{e9}/.*`];
    const paths = ["données/é/ü.txt", "données/ab/x.txt", "donnees/é/x.txt", "été/a", "ete/a", "données", "données/€/日本.txt"].map((rel) => `${T}/${rel}`);
    for (const entry of entries) {
      const set = compileReadPathSet([entry], { workdir: T, home: T });
      if (!set.ok) throw new Error(`${entry}: ${JSON.stringify(set)}`);
      const [compiled] = set.value.entries;
      if (compiled === undefined || compiled.kind === "exact") throw new Error(`${entry} is not a pattern`);
      for (const p of paths) {
        expect(compiled.matcher.test(new TextEncoder().encode(p)), `${entry} vs ${p}`).toBe(compiled.matcher.test(p));
      }
    }
    const p = policy([`glob:${T}/données/?/*.txt`], [`glob:${T}/données/?/*.txt`]);
    expect(decide(p, `${T}/données/é/ü.txt`, realFs)).toBe("Allowed");
    expect(decide(p, `${T}/données/ab/x.txt`, realFs)).toBe("NotDeclared");
  });
});

describe("an exact root's last canonical form, checked before it proves a match", () => {
  // The sidecar's port (src/sidecar/real-path-fs.ts): directories told apart by device and inode, realpath(3) counted.
  const counted = () => {
    const calls: string[] = [];
    const port: PathFs = {
      realpath: (p) => (calls.push(p), fs.realpathSync.native(p)),
      directoryId(p) {
        const st = fs.statSync(p, { bigint: true, throwIfNoEntry: false });
        return st?.isDirectory() === true ? `${st.dev}:${st.ino}` : null;
      },
    };
    return { calls, port };
  };
  const decideWith = (p: ReadPathPolicy, port: PathFs, rel: string) => decide(p, canonicalizeForMatch(path.join(T, rel), realFs)!, port);

  it("proves a later match under a linked root with no realpath of any root, and decides as the plain port does", () => {
    const p = policy([`${T}/homelink`, `${T}/rootlink`, `${T}/outside`], [`${T}/homelink`, `${T}/rootlink`]);
    const { calls, port } = counted();
    // Each root is canonicalized once, when a decision first needs it.
    expect(decideWith(p, port, "realhome/docs/a.md")).toBe("Allowed");
    expect(decideWith(p, port, "data/runs")).toBe("Allowed");
    calls.length = 0;
    for (const rel of ["realhome/docs/a.md", "data/runs/r1/log.txt", "data/runs"]) expect(decideWith(p, port, rel)).toBe("Allowed");
    expect(calls).toEqual([]);
    // What no checked form proves is decided the full way: every exact root canonicalized, as the plain port does.
    for (const rel of ["data/runs-old/1", "outside", "etc/secret"]) expect(decideWith(p, port, rel)).toBe(decideAt(p, rel));
    expect(calls.length).toBeGreaterThan(0);
  });

  it("follows a root relinked elsewhere at the next decision: the old target is refused, the new one allowed", () => {
    const dir = path.join(T, "relink");
    for (const d of ["a", "b"]) fs.mkdirSync(path.join(dir, d), { recursive: true });
    fs.writeFileSync(path.join(dir, "a", "f"), "a");
    fs.writeFileSync(path.join(dir, "b", "secret"), "b");
    fs.symlinkSync(path.join(dir, "a"), path.join(dir, "link"));
    const p = both(path.join(dir, "link"));
    const { port } = counted();
    expect(decideWith(p, port, "relink/a/f")).toBe("Allowed");
    expect(decideWith(p, port, "relink/b/secret")).toBe("NotDeclared");
    fs.rmSync(path.join(dir, "link"));
    fs.symlinkSync(path.join(dir, "b"), path.join(dir, "link"));
    expect(decideWith(p, port, "relink/a/f")).toBe("NotDeclared");
    expect(decideWith(p, port, "relink/b/secret")).toBe("Allowed");
  });

  it("never proves a match with a directory moved away and replaced: the replacement is refused, the moved one allowed", () => {
    const dir = path.join(T, "moved");
    fs.mkdirSync(path.join(dir, "a"), { recursive: true });
    fs.writeFileSync(path.join(dir, "a", "f"), "a");
    fs.symlinkSync(path.join(dir, "a"), path.join(dir, "link"));
    const p = both(path.join(dir, "link"));
    const { port } = counted();
    expect(decideWith(p, port, "moved/a/f")).toBe("Allowed");
    // The granted directory moves to b and the link follows it; a new a takes the old name, with a planted file.
    fs.renameSync(path.join(dir, "a"), path.join(dir, "b"));
    fs.rmSync(path.join(dir, "link"));
    fs.symlinkSync(path.join(dir, "b"), path.join(dir, "link"));
    fs.mkdirSync(path.join(dir, "a"));
    fs.writeFileSync(path.join(dir, "a", "planted"), "x");
    expect(decideWith(p, port, "moved/a/planted")).toBe("NotDeclared");
    expect(decideWith(p, port, "moved/b/f")).toBe("Allowed");
  });

  it("starts matching a root created after the first decision", () => {
    const root = path.join(T, "later-root");
    const p = both(root);
    const { port } = counted();
    expect(decideWith(p, port, "later-root/x")).toBe("NotDeclared");
    fs.mkdirSync(root);
    expect(decideWith(p, port, "later-root/x")).toBe("Allowed");
  });
});
