import { describe, expect, it } from "vitest";

import { compileGlob, escapeGlobLiteral, parseGlob, type GlobToken } from "./glob.ts";

function matcher(pattern: string) {
  const compiled = compileGlob(pattern);
  if (!compiled.ok) throw new Error(`pattern ${pattern} did not compile: ${compiled.error}`);
  return compiled.value;
}

describe("glob dialect (glob crate 0.3.4, literal separator, no leading-dot rule)", () => {
  it.each([
    // pattern, path, matches
    ["/data/*", "/data/x", true],
    ["/data/*", "/data/x/y", false],
    ["/data/*", "/data/", true],
    ["/h/*", "/h/.bashrc", true], // leading dots are not special (glob-008)
    ["/r/**", "/r/.git/config", true], // ** walks into hidden dirs (glob-009)
    ["/d/**", "/d", false], // dir/** does not match dir (glob-004)
    ["/d/**", "/d/x", true],
    ["/d/**", "/d/a/b/c", true],
    ["/d/**/name", "/d/name", true], // zero components (glob-005)
    ["/d/**/name", "/d/a/b/name", true], // glob-006
    ["/d/**/name", "/d/xname", false], // glob-007
    ["/d/**/name", "/d/a/xname", false],
    ["/d/**/**/x", "/d/x", true],
    ["/data/runs/", "/data/runs", false], // a pattern ending in / is dead (glob-019)
    ["/data/runs/", "/data/runs/x", false],
    ["/w//x", "/w/x", false], // an empty component is dead
    ["/a?c", "/abc", true],
    ["/a?c", "/a/c", false],
    ["/a?c", "/ac", false],
    ["/a?c", "/a😀c", true], // ? is one character, not one UTF-16 unit
    ["/x/[abc]", "/x/b", true],
    ["/x/[abc]", "/x/d", false],
    ["/x/[a-z]", "/x/q", true],
    ["/x/[]]", "/x/]", true], // ] first is a member
    ["/x/[-a]", "/x/-", true], // - literal at the start
    ["/x/[a-]", "/x/-", true], // - literal at the end
    ["/x/[z-a]", "/x/m", false], // a reversed range matches nothing
    ["/x/[z-a]", "/x/z", false],
    ["/x/[!abc]", "/x/d", true],
    ["/x/[!abc]", "/x/a", false],
    ["/x/[!]]", "/x/a", true],
    ["/x/[!]]", "/x/]", false],
    ["/x/[^a]", "/x/^", true], // ^ is an ordinary member, negation is !
    ["/x/[^a]", "/x/b", false],
    ["/x[/]y", "/x/y", false], // classes never match /
    ["/x[!a]y", "/x/y", false],
    ["/x[!-0]y", "/x/y", false], // even a range spanning /
    ["/x[!-0]y", "/x.y", true],
    ["/x[!-0]y", "/x1y", true],
    ["/x[*]", "/x*", true], // brackets are the escape (glob-027)
    ["/x[*]", "/xa", false],
    ["/x[?]", "/x?", true],
    ["/x[[]", "/x[", true],
    ["/d/{a,b}", "/d/{a,b}", true], // no brace expansion (glob-016, glob-017)
    ["/d/{a,b}", "/d/a", false],
    ["/d/*.md", "/d/notes.md", true],
    ["/d/*", "/d/a\nb", true], // newline is an ordinary character
    ["/d/**", "/d/a\n/b", true],
    ["**", "/anything/at/all", true],
    ["**/x", "x", true],
    ["**/x", "a/b/x", true],
    ["/Data/**", "/data/x", false], // case-sensitive on Linux
    ["/a\\b", "/a\\b", true], // not an escape; compile() callers turn \ into / beforehand
  ] as const)("%s vs %j -> %s", (pattern, path, expected) => {
    expect(matcher(pattern).test(path)).toBe(expected);
  });

  it.each([
    ["[", 0, "invalid range pattern"],
    ["/a/[", 3, "invalid range pattern"],
    ["/a/[!]", 3, "invalid range pattern"],
    ["/a/[]", 3, "invalid range pattern"],
    ["/a/***", 5, "wildcards are either regular `*` or recursive `**`"],
    ["***", 2, "wildcards are either regular `*` or recursive `**`"],
    ["/a/**b", 5, "recursive wildcards must form a single path component"],
    ["/a/b**", 3, "recursive wildcards must form a single path component"],
    ["a**", 0, "recursive wildcards must form a single path component"],
    ["/😀/b**", 3, "recursive wildcards must form a single path component"], // positions count code points
  ] as const)("%s is a syntax error at %i", (pattern, position, detail) => {
    expect(parseGlob(pattern)).toEqual({ ok: false, error: `Pattern syntax error near position ${position}: ${detail}` });
  });

  it("escapes metacharacters by bracketing them, leaving ! alone", () => {
    expect(escapeGlobLiteral("/ho[me]/a*b?c!")).toBe("/ho[[]me[]]/a[*]b[?]c!");
    const escaped = matcher(`${escapeGlobLiteral("/we[ird]*?")}/**`);
    expect(escaped.test("/we[ird]*?/x")).toBe(true);
    expect(escaped.test("/wei/x")).toBe(false);
  });
});

// A direct port of the crate's `matches_from` backtracking search, used only as an oracle: the RE2
// translation must agree with it on every generated pattern and path.
function referenceMatch(tokens: readonly GlobToken[], path: string): boolean {
  const chars = Array.from(path);
  const inSpecs = (specs: readonly (readonly [number, number])[], cp: number): boolean => specs.some(([lo, hi]) => lo <= cp && cp <= hi);
  const from = (followsSeparator: boolean, start: number, ti: number): "match" | "sub" | "entire" => {
    let pos = start;
    let follows = followsSeparator;
    for (let k = ti; k < tokens.length; k += 1) {
      const token = tokens[k] as GlobToken;
      if (token.t === "anySeq" || token.t === "anyRecursive") {
        const empty = from(follows, pos, k + 1);
        if (empty !== "sub") return empty;
        while (pos < chars.length) {
          const c = chars[pos++];
          follows = c === "/";
          if (token.t === "anyRecursive" && !follows) continue;
          if (token.t === "anySeq" && follows) return "sub";
          const rest = from(follows, pos, k + 1);
          if (rest !== "sub") return rest;
        }
        continue;
      }
      if (pos >= chars.length) return "entire";
      const c = chars[pos++] ?? "";
      const cp = c.codePointAt(0) ?? 0;
      const isSep = c === "/";
      let ok: boolean;
      if (token.t === "char") ok = token.cp === cp;
      else if (token.t === "anyChar") ok = !isSep;
      else if (token.t === "within") ok = !isSep && inSpecs(token.specs, cp);
      else ok = !isSep && !inSpecs(token.specs, cp);
      if (!ok) return "sub";
      follows = isSep;
    }
    return pos >= chars.length ? "match" : "sub";
  };
  return from(true, 0, 0) === "match";
}

describe("RE2 translation agrees with the crate's own matching algorithm", () => {
  it("on generated patterns and paths", () => {
    // mulberry32: a small deterministic generator whose low bits are usable.
    let seed = 12345;
    const next = (n: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    const atoms = ["a", "b", "/", ".", "*", "**", "?", "[a-b]", "[!a]", "[/]", "[!/]", "[]]", "]", "**/", "/**"];
    const pathAtoms = ["a", "b", "/", ".", "]"];
    let compared = 0;
    for (let p = 0; p < 600; p += 1) {
      const pattern = Array.from({ length: 1 + next(6) }, () => atoms[next(atoms.length)]).join("");
      const parsed = parseGlob(pattern);
      if (!parsed.ok) continue;
      const compiled = matcher(pattern);
      for (let q = 0; q < 25; q += 1) {
        const path = Array.from({ length: next(8) }, () => pathAtoms[next(pathAtoms.length)]).join("");
        expect(compiled.test(path), `${pattern} vs ${JSON.stringify(path)}`).toBe(referenceMatch(parsed.value, path));
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(5000);
  });
});
