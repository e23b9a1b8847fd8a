import { describe, expect, it } from "vitest";

import { compileEntry, compileReadPathSet, resolveLeviathHome, validateEntrySyntax, type CompileContext, type CompiledEntry } from "./compile.ts";
import { ENTRY_REASONS } from "./entry.ts";

const CTX: CompileContext = { workdir: "/w", home: "/home/me" };

function compiled(raw: string, ctx: CompileContext = CTX): CompiledEntry {
  const result = compileEntry(raw, ctx);
  if (!result.ok) throw new Error(`${raw} did not compile: ${result.error}`);
  return result.value;
}

function error(raw: string, ctx: CompileContext = CTX): string {
  const result = compileEntry(raw, ctx);
  if (result.ok) throw new Error(`${raw} compiled but should not have`);
  return result.error;
}

const refused = (raw: string, reason: string): string => `read_paths entry '${raw}': ${reason}`;

function describeEntry(entry: CompiledEntry): string {
  if (entry.kind === "exact") return `exact ${entry.root}`;
  if (entry.kind === "glob") return `glob ${entry.pattern}`;
  return `regex ${entry.source}`;
}

describe("classification (spec §2.1)", () => {
  it.each([
    ["/abs/dir", "exact /abs/dir"],
    ["relative/dir", "exact /w/relative/dir"],
    ["REGEX:/x", "exact /w/REGEX:/x"], // prefixes are case-sensitive
    ["Glob:/x/**", "exact /w/Glob:/x/**"],
    [" /data", "exact /w/ /data"], // only the emptiness test trims
    ["\uFEFF", "exact /w/\uFEFF"], // U+FEFF is not White_Space in Rust, unlike JS trim
    ["glob:   ", "glob /w/   "],
    ["/data/[x]", "exact /data/[x]"], // exact entries are literal (exact-020)
    ["C:\\Users\\me", "exact /w/C:\\Users\\me"], // not absolute on Linux
    ["../shared", "exact /w/../shared"], // stored uncanonicalized
    ["~", "exact /home/me"],
    ["~/", "exact /home/me"],
    ["~/docs", "exact /home/me/docs"],
    ["~\\docs", "exact /home/me/docs"],
    ["~//etc", "exact /etc"], // Rust's Path::join: an absolute tail replaces the base
    ["glob:/data/**", "glob /data/**"],
    ["glob:~/runs/**", "glob /home/me/runs/**"],
    ["glob:~\\runs\\**", "glob /home/me/runs/**"], // backslashes become / first (glob-035)
    ["glob:\\data\\**", "glob /data/**"],
    ["glob:C:/x/*", "glob C:/x/*"],
    ["glob://server/share/*", "glob //server/share/*"],
    ["regex:/data/.*", "regex ^(?:/data/.*)$"],
    ["regex:C:/x", "regex ^(?:C:/x)$"],
    ["regex:~", "regex ^(?:/home/me)$"],
    ["regex:~/runs/.*", "regex ^(?:/home/me/runs/.*)$"],
  ])("%j compiles to %s", (raw, expected) => {
    expect(describeEntry(compiled(raw))).toBe(expected);
  });

  it.each(["", "   ", "\t\n", "\u3000", "\u0085"])("%j is the empty-entry error", (raw) => {
    expect(error(raw)).toBe("read_paths entry is empty");
  });
});

describe("errors (spec §2.7)", () => {
  it.each([
    ["glob:", ENTRY_REASONS.globEmpty],
    ["regex:", ENTRY_REASONS.regexEmpty],
    ["~oops", ENTRY_REASONS.tildeUser],
    ["~~", ENTRY_REASONS.tildeUser],
    ["~user/x", ENTRY_REASONS.tildeUser],
    ["glob:~other/**", ENTRY_REASONS.tildeUser],
    ["regex:~other/.*", ENTRY_REASONS.tildeUser],
    ["regex:~\\d", ENTRY_REASONS.tildeUser], // no ~\ form for regexes
    ["regex:.*", ENTRY_REASONS.regexRelative],
    ["regex:etc/passwd", ENTRY_REASONS.regexRelative],
    ["regex:(", ENTRY_REASONS.regexRelative],
    ["regex:\\/a", ENTRY_REASONS.regexRelative],
    ["regex:[A-Z]:/x", ENTRY_REASONS.regexRelative],
    ["regex:(?=x)/a", ENTRY_REASONS.regexRelative],
    ["regex: /x", ENTRY_REASONS.regexRelative],
    ["glob:/a/../b", ENTRY_REASONS.globDotComponent],
    ["glob:/a/./b", ENTRY_REASONS.globDotComponent],
    ["glob:~/../x", ENTRY_REASONS.globDotComponent],
    ["glob:a/../../b", ENTRY_REASONS.globDotComponent],
    ["glob:.", ENTRY_REASONS.globDotComponent],
    ["glob:..", ENTRY_REASONS.globDotComponent],
    ["glob:/a/[", "invalid glob: Pattern syntax error near position 3: invalid range pattern"],
    ["glob:/a/[!]", "invalid glob: Pattern syntax error near position 3: invalid range pattern"],
    ["glob:/a/***", "invalid glob: Pattern syntax error near position 5: wildcards are either regular `*` or recursive `**`"],
    ["glob:/a/**b", "invalid glob: Pattern syntax error near position 5: recursive wildcards must form a single path component"],
    ["glob:/a/b**", "invalid glob: Pattern syntax error near position 3: recursive wildcards must form a single path component"],
    // The position counts into the expanded text: `/w/a/**b`.
    ["glob:a/**b", "invalid glob: Pattern syntax error near position 7: recursive wildcards must form a single path component"],
  ])("%j is refused: %s", (raw, reason) => {
    expect(error(raw)).toBe(refused(raw, reason));
  });

  it.each(["~", "~/docs", "glob:~/docs/**", "regex:~/docs/.*"])("%j needs a home (err-024, err-028)", (raw) => {
    expect(error(raw, { workdir: "/w", home: undefined })).toBe(refused(raw, ENTRY_REASONS.noHome));
  });

  it("checks the ~user form before the missing home", () => {
    expect(error("~oops", { workdir: "/w", home: undefined })).toBe(refused("~oops", ENTRY_REASONS.tildeUser));
  });

  it("accepts dots that are not whole components", () => {
    expect(describeEntry(compiled("glob:/a/.../b"))).toBe("glob /a/.../b");
    expect(describeEntry(compiled("glob:/a/.hidden/**"))).toBe("glob /a/.hidden/**");
  });

  it("refuses over-long entries and lone surrogates (ours, fail-closed)", () => {
    const long = `/${"a".repeat(4096)}`;
    expect(error(long)).toBe(refused(long, ENTRY_REASONS.tooLong));
    expect(error("/a\uD800b")).toBe(refused("/a\uD800b", ENTRY_REASONS.notUnicode));
    expect(describeEntry(compiled("/a😀b"))).toBe("exact /a😀b");
  });

  it("stops a list at its first invalid entry", () => {
    const result = compileReadPathSet(["/ok", "glob:", "regex:"], CTX);
    expect(result).toEqual({ ok: false, error: refused("glob:", ENTRY_REASONS.globEmpty) });
    const fine = compileReadPathSet(["/ok", "glob:/x/**"], CTX);
    expect(fine.ok && fine.value.entries.map(describeEntry)).toEqual(["exact /ok", "glob /x/**"]);
  });
});

describe("relative glob folding (spec §3.3)", () => {
  it.each([
    ["/space/run", "glob:../shared/**", "/space/shared/**"],
    ["/space/run", "glob:../", "/space"], // glob-022
    ["/w", "glob:./", "/w"],
    ["/a/b", "glob:./../x/**", "/a/x/**"],
    ["/a/b", "glob:.././../x", "/x"],
    ["/", "glob:docs/**", "/docs/**"], // no doubled slash
    ["/w", "glob:.//x", "/w//x"], // dead, but accepted
    ["/w", "glob:**", "/w/**"], // workdir only (glob-033)
    ["/w/", "glob:x", "/w/x"], // trailing slashes on the workdir are dropped
    ["/we[ird]/w", "glob:./docs/**", "/we[[]ird[]]/w/docs/**"], // the workdir is data
    ["/a", "glob:../", ""], // folds to the root's empty prefix: a dead pattern, as upstream
  ])("workdir %s, %s -> %s", (workdir, raw, pattern) => {
    expect(describeEntry(compiled(raw, { workdir, home: "/h" }))).toBe(`glob ${pattern}`);
  });

  it("refuses climbing past / (err-023)", () => {
    expect(error("glob:../../../x/**", { workdir: "/w", home: "/h" })).toBe(
      refused("glob:../../../x/**", ENTRY_REASONS.globEscapesRoot),
    );
    expect(error("glob:../x", { workdir: "/", home: "/h" })).toBe(refused("glob:../x", ENTRY_REASONS.globEscapesRoot));
  });

  it("lets up to 9 leading ../ pass manifest validation, and refuses 10 (err-022)", () => {
    expect(validateEntrySyntax(`glob:${"../".repeat(9)}x/**`)).toEqual({ ok: true });
    const ten = `glob:${"../".repeat(10)}x/**`;
    expect(validateEntrySyntax(ten)).toEqual({ ok: false, error: refused(ten, ENTRY_REASONS.globEscapesRoot) });
  });
});

describe("home splicing", () => {
  it("escapes glob metacharacters in the home (match-016)", () => {
    const entry = compiled("glob:~/docs/**", { workdir: "/w", home: "/ho[me]" });
    expect(describeEntry(entry)).toBe("glob /ho[[]me[]]/docs/**");
    if (entry.kind !== "glob") throw new Error("expected a glob");
    expect(entry.matcher.test("/ho[me]/docs/a.md")).toBe(true);
    expect(entry.matcher.test("/hom/docs/a.md")).toBe(false);
  });

  it("escapes regex metacharacters in the home (match-019)", () => {
    const entry = compiled("regex:~/docs/.*", { workdir: "/w", home: "/ho.me" });
    expect(describeEntry(entry)).toBe("regex ^(?:/ho\\.me/docs/.*)$");
    if (entry.kind !== "regex") throw new Error("expected a regex");
    expect(entry.matcher.test("/ho.me/docs/a")).toBe(true);
    expect(entry.matcher.test("/hoXme/docs/a")).toBe(false);
  });

  it("escapes every Rust metacharacter in a way RE2 accepts", () => {
    const home = "/h-o#m~e&x(1)[2]{3}|^$+?*.\\";
    const entry = compiled("regex:~/a", { workdir: "/w", home });
    if (entry.kind !== "regex") throw new Error("expected a regex");
    expect(entry.matcher.test(`${home}/a`)).toBe(true);
    expect(entry.matcher.test("/h-o#m~e&x1/a")).toBe(false);
  });

  it("treats an empty LEVIATH_HOME as a valid home (match-024)", () => {
    const home = resolveLeviathHome({ LEVIATH_HOME: "" }, "/home/os");
    expect(home).toBe("");
    expect(describeEntry(compiled("glob:~/docs/**", { workdir: "/w", home }))).toBe("glob /docs/**");
  });

  it.each([
    [{ LEVIATH_HOME: "/lh" }, "/home/os", "/lh"],
    [{}, "/home/os", "/home/os"],
    [{ LEVIATH_HOME: undefined }, undefined, undefined],
  ])("resolves the home from %j and %s", (env, osHome, expected) => {
    expect(resolveLeviathHome(env, osHome)).toBe(expected);
  });
});

describe("validateEntrySyntax", () => {
  it.each(["/abs/dir", "relative/dir", "~/docs", "glob:~/runs/**", "glob:../shared/**", "regex:/data/.*", "C:\\Users\\me\\docs"])(
    "accepts %j",
    (raw) => {
      expect(validateEntrySyntax(raw)).toEqual({ ok: true });
    },
  );

  it.each(["", "glob:[", "regex:(", "regex:relative/.*", "~oops", "regex:/nothing)|(.*"])("refuses %j", (raw) => {
    expect(validateEntrySyntax(raw).ok).toBe(false);
  });
});
