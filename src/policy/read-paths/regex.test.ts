import RE2 from "re2";
import { describe, expect, it } from "vitest";

import { compileEntry } from "./compile.ts";
import { ENTRY_REASONS } from "./entry.ts";
import { compileAnchoredRegex } from "./regex.ts";
import { translateRustRegex } from "./regex-dialect.ts";

function regexMatcher(raw: string) {
  const result = compileEntry(raw, { workdir: "/w", home: "/home/me" });
  if (!result.ok) throw new Error(`${raw} did not compile: ${result.error}`);
  if (result.value.kind !== "regex") throw new Error(`${raw} is not a regex entry`);
  return result.value.matcher;
}

function reasonFor(body: string): string {
  const result = compileAnchoredRegex(body);
  if (result.ok) throw new Error(`${body} compiled but should not have`);
  return result.reason;
}

describe("anchoring", () => {
  it.each([
    ["regex:/etc/runs", "/etc/runs", true],
    ["regex:/etc/runs", "/etc/runs-anything", false],
    ["regex:/etc/runs", "/prefix/etc/runs", false],
    ["regex:/etc/runs/.*", "/etc/runs/deep/file", true],
    ["regex:/a|/b", "/a", true], // a top-level | stays inside the group
    ["regex:/a|/b", "/b", true],
    ["regex:/a|/b", "/a/b", false],
    ["regex:/a|/b", "/x/b", false],
    ["regex:/a(?m)", "/a\nx", false], // flags set in the body end with the group
    ["regex:/a(?m)$", "/a\nx", false],
    ["regex:/.*", "/any/path", true], // accepted: only the lint calls it broad
  ])("%s vs %j -> %s", (raw, path, expected) => {
    expect(regexMatcher(raw).test(path)).toBe(expected);
  });
});

describe("anchor escapes are refused (deliberate improvement over upstream)", () => {
  it.each([
    "/nothing)|(.*", // regex-021
    "/a)|(/b", // regex-022
    "/x)(?x)|.*#", // match-027
    "/x)|.*",
    "/a(?x)b#",
    "/a(?ix:b)",
    "/a(?x-i)",
  ])("%j", (body) => {
    expect(reasonFor(body)).toBe(ENTRY_REASONS.regexEscapesAnchors);
  });

  it("names the entry in the full error", () => {
    const result = compileEntry("regex:/nothing)|(.*", { workdir: "/w", home: undefined });
    expect(result).toEqual({
      ok: false,
      error: "read_paths entry 'regex:/nothing)|(.*': regex escapes its anchors (unbalanced ')' or verbose-mode comment); write one complete pattern",
    });
  });

  it("does not mistake escaped or class parentheses for an escape", () => {
    expect(regexMatcher("regex:/a\\)|\\(b").test("/a)")).toBe(true);
    expect(regexMatcher("regex:/a\\)|\\(b").test("(b")).toBe(true);
    expect(regexMatcher("regex:/[)]x").test("/)x")).toBe(true);
    expect(regexMatcher("regex:/(a|b)/c").test("/b/c")).toBe(true);
  });
});

describe("the Rust dialect on RE2", () => {
  it.each([
    ["regex:/data/.", "/data/\r", true], // Rust's . is everything but \n
    ["regex:/data/.", "/data/\u2028", true],
    ["regex:/data/.", "/data/\n", false],
    ["regex:/data/.", "/data/😀", true],
    ["regex:/x.y", "/x/y", true], // . matches / (regex-017)
    ["regex:/data/(?s).", "/data/\n", true],
    ["regex:/(?i)data/.*", "/DATA/x", true],
    ["regex:/(?i:d)ata", "/Data", true],
    ["regex:/(?i)k", "/\u212A", true], // Unicode simple case folding (Kelvin sign)
    ["regex:/(?P<n>a)/(?<m>b)", "/a/b", true],
    ["regex:/\\d+", "/\u0661\u0662", true], // Unicode \d
    ["regex:/\\D", "/\u0661", false],
    ["regex:/\\w+", "/é\u24B6_x", true], // Unicode \w (Alphabetic, incl. Other_Alphabetic)
    ["regex:/\\W", "/é", false],
    ["regex:/\\s", "/\u3000", true], // Unicode \s (White_Space)
    ["regex:/\\S", "/\u3000", false],
    ["regex:/[\\d\\s]+", "/\u0661\u3000", true],
    ["regex:/[[:alpha:]\\s]+", "/a\u3000b", true], // POSIX class then a Unicode class
    ["regex:/[[:^alpha:]]", "/1", true],
    ["regex:/[[:^alpha:]]", "/a", false],
    ["regex:/[]a]+", "/]a", true], // ] first is a member
    ["regex:/[^]a]", "/b", true],
    ["regex:/[^]a]", "/]", false],
    ["regex:/a\\_b", "/a_b", true], // superfluous escapes are literals
    ["regex:/a\\-b\\#\\&\\~", "/a-b#&~", true],
    ["regex:/\\x41\\x{42}\\u0043\\U00000044\\u{45}", "/ABCDE", true],
    ["regex:/a{2}", "/aa", true],
    ["regex:/a{2,}", "/aaa", true],
    ["regex:/a{1,2}?", "/a", true],
    ["regex:/\\p{Greek}+", "/αβ", true],
    ["regex:/\\pL+", "/abc", true],
    ["regex:/x\\z", "/x", true],
    ["regex:/x$\\z", "/x", true],
  ])("%s vs %j -> %s", (raw, path, expected) => {
    expect(regexMatcher(raw).test(path)).toBe(expected);
  });

  it.each([
    ["/a(?=b)", "invalid regex: look-around, including look-ahead and look-behind, is not supported"],
    ["/a(?!b)", "invalid regex: look-around, including look-ahead and look-behind, is not supported"],
    ["/(?<=a)b", "invalid regex: look-around, including look-ahead and look-behind, is not supported"],
    ["/(?<!a)b", "invalid regex: look-around, including look-ahead and look-behind, is not supported"],
    ["/(a)\\1", "invalid regex: backreferences are not supported"],
    ["/\\0", "invalid regex: backreferences are not supported"],
    ["/\\bx", "invalid regex: word boundaries (\\b, \\B, \\<, \\>) are Unicode-aware upstream but ASCII-only in RE2; they are not supported"],
    ["/\\<x", "invalid regex: word boundaries (\\b, \\B, \\<, \\>) are Unicode-aware upstream but ASCII-only in RE2; they are not supported"],
    ["/[\\W]", "invalid regex: \\W inside a character class is not supported; use [^...] around \\w instead"],
    ["/[[a]]", "invalid regex: nested character classes and class set operations (&&, --, ~~) are not supported; escape a literal '[' as \\["],
    ["/[a&&b]", "invalid regex: nested character classes and class set operations (&&, --, ~~) are not supported; escape a literal '[' as \\["],
    ["/[a--b]", "invalid regex: nested character classes and class set operations (&&, --, ~~) are not supported; escape a literal '[' as \\["],
    ["/a{b", "invalid regex: '{' must open a counted repetition ({n}, {n,} or {n,m}); write a literal brace as \\{"],
    ["/a{,3}", "invalid regex: '{' must open a counted repetition ({n}, {n,} or {n,m}); write a literal brace as \\{"],
    ["/\\Qa\\E", "invalid regex: unrecognized escape sequence \\Q"],
    ["/\\C", "invalid regex: unrecognized escape sequence \\C"],
    ["/\\u41", "invalid regex: invalid hexadecimal escape"],
    ["/\\x{D800}", "invalid regex: invalid hexadecimal escape"],
    ["/\\x{110000}", "invalid regex: invalid hexadecimal escape"],
    ["/(?u)a", "invalid regex: the 'u', 'R' and 'x' flags are not supported"],
    ["/(?-x)a", "invalid regex: the 'u', 'R' and 'x' flags are not supported"],
    ["/\\p{Greek", "invalid regex: unclosed \\p{...} property"],
  ])("%j is refused", (body, reason) => {
    expect(reasonFor(body)).toBe(reason);
  });

  it.each(["/a/(", "/a[", "/a**", "/\\p{greek}", "/a\\"])("%j gets the engine's message", (body) => {
    expect(reasonFor(body)).toMatch(/^invalid regex: \S/);
  });

  it("keeps the entry's own syntax in the source the report reads", () => {
    const result = compileAnchoredRegex("/data/\\d+\\.md");
    expect(result.ok && result.value.source).toBe("^(?:/data/\\d+\\.md)$");
  });
});

describe("every accepted body is fully anchored", () => {
  it("agrees with RE2's own whole-string matching on generated bodies", () => {
    // mulberry32: a small deterministic generator whose low bits are usable.
    let seed = 777;
    const next = (n: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    const atoms = ["a", "b", "/", ".*", ")", "(", "|", "(?:", "(?i)", "(?s)", "(?m)", "$", "^", "#", "\n", "[", "]", "\\", "?", "+", "{2}", "(?x)", "\\)", "[)]"];
    const inputs = ["/", "/a", "/b", "/ab", "a", "b/a", "/a\nb", "x/a", "/a/b", "", "/aa", "ba"];
    let accepted = 0;
    for (let n = 0; n < 3000; n += 1) {
      const body = `/${Array.from({ length: 1 + next(6) }, () => atoms[next(atoms.length)]).join("")}`;
      const compiled = compileAnchoredRegex(body);
      if (!compiled.ok) continue;
      const translated = translateRustRegex(body);
      if (!translated.ok) throw new Error(`accepted ${body} without a translation`);
      // RE2.Set with anchor "both" anchors the pattern itself, not by splicing text around it.
      const whole = new RE2.Set([translated.re2], { anchor: "both" });
      for (const input of inputs) {
        expect(compiled.value.matcher.test(input), `${JSON.stringify(body)} vs ${JSON.stringify(input)}`).toBe(whole.test(input));
      }
      accepted += 1;
    }
    expect(accepted).toBeGreaterThan(300);
  });
});
