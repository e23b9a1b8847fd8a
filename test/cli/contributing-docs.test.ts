// docs/contributing.md says where each kind of change goes by naming files: every repository path it puts in
// backticks must exist (a placeholder such as `<plural>` or a glob must match at least one), and every
// `npm run <script>` it names must be a script of package.json. Paths outside the repository (`../shared/…`,
// `~/.cache/…`) are not checked.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repo } from "./run-cli.ts";

const DOC = "docs/contributing.md";
const doc = readFileSync(repo(DOC), "utf8");
const spans = [...doc.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);

/** A word of a code span that names a repository path: it has a slash, or it is a file name at the top. */
function isRepoPath(word: string): boolean {
  if (/^(\.\.\/|~|\/|https?:)/.test(word)) return false;
  return word.includes("/") || /^[\w-]+(\.[\w-]+)*\.(md|ts|js|json|ya?ml)$/.test(word);
}

/** `<name>` stands for one path segment's part, `*` for any characters of a segment, `**` for any depth. */
function segmentPattern(segment: string): RegExp {
  const source = segment.split(/(<[^>]+>|\*)/).map((part) => (part === "*" || /^<[^>]+>$/.test(part) ? "[^/]*" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))).join("");
  return new RegExp(`^${source}$`);
}

/** Whether some file or folder of the repository matches `path` (relative, placeholders and globs allowed). */
function matches(dir: string, segments: string[]): boolean {
  const [first, ...rest] = segments;
  if (first === undefined || first === "") return true;
  if (first === "**") return matches(dir, rest) || subdirs(dir).some((d) => matches(join(dir, d), segments));
  if (!/[<*]/.test(first)) return existsSync(join(dir, first)) && (rest.length === 0 || isDir(join(dir, first))) && matches(join(dir, first), rest);
  const pattern = segmentPattern(first);
  return existsSync(dir) && isDir(dir) && readdirSync(dir).some((name) => pattern.test(name) && matches(join(dir, name), rest));
}

const isDir = (p: string) => statSync(p).isDirectory();
const subdirs = (dir: string) => (isDir(dir) ? readdirSync(dir).filter((name) => name !== "node_modules" && !name.startsWith(".") && isDir(join(dir, name))) : []);

describe(DOC, () => {
  const paths = [...new Set(spans.flatMap((span) => span.split(/\s+/)).filter(isRepoPath))];

  it("names many repository paths", () => {
    expect(paths.length).toBeGreaterThanOrEqual(50);
  });

  it("names only paths that exist", () => {
    const missing = paths.filter((p) => !matches(repo(""), p.split("/")));
    expect(missing).toEqual([]);
  });

  it("names only npm scripts that package.json has", () => {
    const scripts = Object.keys((JSON.parse(readFileSync(repo("package.json"), "utf8")) as { scripts: Record<string, string> }).scripts);
    const named = [...new Set(spans.flatMap((span) => [...span.matchAll(/\bnpm run ([\w:-]+)/g)].map((m) => m[1]!)))];
    expect(named.length).toBeGreaterThanOrEqual(8);
    expect(named.filter((name) => !scripts.includes(name))).toEqual([]);
  });

  it("checks what it says it checks: a missing path and a placeholder that matches nothing are found", () => {
    expect(matches(repo(""), "src/api/no-such-file.ts".split("/"))).toBe(false);
    expect(matches(repo(""), "crds/leviath.dev_<plural>.json".split("/"))).toBe(false);
    expect(matches(repo(""), "crds/leviath.dev_<plural>.yaml".split("/"))).toBe(true);
    expect(matches(repo(""), "src/**/*.test.ts".split("/"))).toBe(true);
    expect(matches(repo(""), "README.md/".split("/"))).toBe(false);
  });
});
