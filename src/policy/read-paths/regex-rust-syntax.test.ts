import RE2 from "re2";
import { describe, expect, it } from "vitest";

import { compileEntry } from "./compile.ts";
import { compileAnchoredRegex } from "./regex.ts";
import { findRustSyntaxError, isCaptureNameChar, RUST_SYNTAX_ERRORS as E } from "./regex-rust-syntax.ts";

describe("what Rust's regex refuses and RE2 reads a meaning into", () => {
  it.each([
    // A repetition after a flag group, or with nothing before it: RE2 repeats the character before the flags.
    ["/a(?i)*", E.repetitionMissing],
    ["/a(?i){2}", E.repetitionMissing],
    ["/a(?i)+", E.repetitionMissing],
    ["/a(?s)?", E.repetitionMissing],
    ["/a(?i)(?s)*", E.repetitionMissing],
    ["/a(?)b", E.repetitionMissing],
    ["/(a|(?i)*)", E.repetitionMissing],
    // Flags: each once, one negation, and a letter after it.
    ["/a(?ii)b", E.flagDuplicate],
    ["/a(?i-i)b", E.flagDuplicate],
    ["/a(?is-s:b)", E.flagDuplicate],
    ["/a(?i-s-m)b", E.flagRepeatedNegation],
    ["/a(?i-)b", E.flagDanglingNegation],
    ["/a(?-:b)", E.flagDanglingNegation],
    // Group names: a letter or `_` first, then letters, digits, `_`, `.`, `[`, `]`; each name once.
    ["/(?P<1n>x)", E.groupNameInvalid],
    ["/(?<1n>x)", E.groupNameInvalid],
    ["/(?P<a-b>x)", E.groupNameInvalid],
    ["/(?P<>x)", E.groupNameEmpty],
    ["/(?P<a>x)(?P<a>y)", E.groupNameDuplicate],
    // A class range's ends are characters, never classes: RE2 reads `[\d-z]` as `\d`, `-` and `z`.
    ["/[\\d-z]", E.classRangeLiteral],
    ["/[a-\\d]", E.classRangeLiteral],
    ["/[\\w-z]", E.classRangeLiteral],
    ["/[\\pL-z]", E.classRangeLiteral],
    ["/[\\p{Greek}-z]", E.classRangeLiteral],
    ["/[a-[:alpha:]]", E.classRangeLiteral],
    ["/[[:digit:]-[:alpha:]]", E.classRangeLiteral],
  ])("%j: %s", (body, error) => {
    expect(findRustSyntaxError(body)).toBe(error);
    expect(compileAnchoredRegex(body)).toEqual({ ok: false, reason: `invalid regex: ${error}` });
  });

  it.each([
    "/a*", "/a(?i)b*", "/a(?i:b)*", "/(?i)a+", "/^*a", "/a|b*", "/(a)*", "/[a-z]*", "/a{2}", "/a*?", "/a??",
    "/(?i-s)a", "/(?is:a)", "/(?:)", "/(?P<name>a)(?<other>b)", "/(?P<_x1>a)", "/(?P<é>a)",
    "/[\\d-]", "/[-\\d]", "/[a-z-0]", "/[\\x41-\\x5A]", "/[\\n-\\r]", "/[\\--/]", "/[[:alpha:]-]", "/[]-a]", "/[^]-a]", "/\\{2}",
  ])("%j is a regex Rust accepts, and so do we", (body) => {
    expect(findRustSyntaxError(body)).toBeUndefined();
    expect(compileAnchoredRegex(body).ok).toBe(true);
  });

  it("RE2 alone accepts each refused text (the reason for the check)", () => {
    for (const body of ["/a(?i)*", "/a(?i){2}", "/a(?ii)b", "/(?P<1n>x)", "/[\\d-z]", "/a(?)b"]) expect(() => new RE2(body)).not.toThrow();
  });

  it("allows in a capture group name what regex-syntax allows", () => {
    expect(["_", "a", "Z", "é"].every((c) => isCaptureNameChar(c, true))).toBe(true);
    expect(["1", ".", "[", "-", " "].some((c) => isCaptureNameChar(c, true))).toBe(false);
    expect(["1", ".", "[", "]", "_", "ß"].every((c) => isCaptureNameChar(c, false))).toBe(true);
    expect(["-", " ", ">", "/"].some((c) => isCaptureNameChar(c, false))).toBe(false);
  });

  it("names the entry in the refusal", () => {
    expect(compileEntry("regex:/data(?i)*", { workdir: "/w", home: undefined })).toEqual({ ok: false, error: "read_paths entry 'regex:/data(?i)*': invalid regex: repetition operator missing expression" });
    expect(compileEntry("regex:~/[\\d-z]", { workdir: "/w", home: "/home/me" })).toEqual({ ok: false, error: "read_paths entry 'regex:~/[\\d-z]': invalid regex: invalid range boundary, must be a literal" });
  });
});
