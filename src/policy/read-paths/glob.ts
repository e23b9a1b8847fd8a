// The glob dialect of Rust's `glob` crate 0.3.4 (spec §4.3), with `require_literal_separator` on,
// `require_literal_leading_dot` off and case-sensitive matching. Patterns are tokenized exactly as the
// crate does, then translated to an RE2 program so matching is linear-time.
import RE2 from "re2";

import type { CompileResult } from "./entry.ts";

/** A compiled path matcher; RE2 underneath, never a JS RegExp. */
export interface PathMatcher {
  /** A path as a string, or as its UTF-8 bytes (cheaper when one path is tested against many matchers). */
  test(path: string | Uint8Array): boolean;
}

/** One glob token, as the crate's `PatternToken`. Character ranges are code point pairs. */
export type GlobToken =
  | { readonly t: "char"; readonly cp: number }
  | { readonly t: "anyChar" }
  | { readonly t: "anySeq" }
  | { readonly t: "anyRecursive" }
  | { readonly t: "within"; readonly specs: readonly CharSpec[] }
  | { readonly t: "except"; readonly specs: readonly CharSpec[] };

/** `[lo, hi]`; a single character is `[c, c]`. A reversed range (lo > hi) matches nothing. */
export type CharSpec = readonly [number, number];

const ERROR_WILDCARDS = "wildcards are either regular `*` or recursive `**`";
const ERROR_RECURSIVE_WILDCARDS = "recursive wildcards must form a single path component";
const ERROR_INVALID_RANGE = "invalid range pattern";

const SLASH = 0x2f;
const STAR = 0x2a;
const NEVER = "[^\\x{0}-\\x{10FFFF}]";

function syntaxError(pos: number, msg: string): { ok: false; error: string } {
  return { ok: false, error: `Pattern syntax error near position ${pos}: ${msg}` };
}

/** Tokenize a glob like `glob::Pattern::new`; positions in errors count code points. */
export function parseGlob(pattern: string): CompileResult<readonly GlobToken[]> {
  const cps = Array.from(pattern, (ch) => ch.codePointAt(0) ?? 0);
  const tokens: GlobToken[] = [];
  let i = 0;
  while (i < cps.length) {
    const c = cps[i];
    if (c === 0x3f) {
      tokens.push({ t: "anyChar" });
      i += 1;
    } else if (c === STAR) {
      const stars = parseStars(cps, i, tokens);
      if (!stars.ok) return stars;
      i = stars.value;
    } else if (c === 0x5b) {
      const parsed = parseClass(cps, i);
      if (parsed === null) return syntaxError(i, ERROR_INVALID_RANGE);
      tokens.push(parsed.token);
      i = parsed.next;
    } else {
      tokens.push({ t: "char", cp: c ?? 0 });
      i += 1;
    }
  }
  return { ok: true, value: tokens };
}

/**
 * A run of `*` at `i`: `*` is any sequence within a component; `**` a whole `**` component (after a `/` or at the
 * start, before a `/` or at the end) is any number of components. Pushes its token; the position after it.
 */
function parseStars(cps: readonly number[], start: number, tokens: GlobToken[]): CompileResult<number> {
  let i = start;
  while (i < cps.length && cps[i] === STAR) i += 1;
  const count = i - start;
  if (count > 2) return syntaxError(start + 2, ERROR_WILDCARDS);
  if (count === 1) {
    tokens.push({ t: "anySeq" });
    return { ok: true, value: i };
  }
  if (!(start === 0 || cps[start - 1] === SLASH)) return syntaxError(start - 1, ERROR_RECURSIVE_WILDCARDS);
  if (i < cps.length && cps[i] === SLASH) i += 1;
  else if (i !== cps.length) return syntaxError(i, ERROR_RECURSIVE_WILDCARDS);
  // The crate collapses `**/**/` only when at least two tokens precede; kept for parity.
  const last = tokens[tokens.length - 1];
  if (!(tokens.length > 1 && last?.t === "anyRecursive")) tokens.push({ t: "anyRecursive" });
  return { ok: true, value: i };
}

/** `[...]` / `[!...]` at `i`: a `]` right after the opening is a member; `null` when unterminated. */
function parseClass(cps: readonly number[], i: number): { token: GlobToken; next: number } | null {
  const negated = cps[i + 1] === 0x21;
  if (negated) {
    if (i + 4 > cps.length) return null;
    const close = cps.indexOf(0x5d, i + 3);
    if (close < 0) return null;
    return { token: { t: "except", specs: parseSpecs(cps.slice(i + 2, close)) }, next: close + 1 };
  }
  if (i + 3 > cps.length) return null;
  const close = cps.indexOf(0x5d, i + 2);
  if (close < 0) return null;
  return { token: { t: "within", specs: parseSpecs(cps.slice(i + 1, close)) }, next: close + 1 };
}

function parseSpecs(members: readonly number[]): CharSpec[] {
  const specs: CharSpec[] = [];
  let i = 0;
  while (i < members.length) {
    const lo = members[i] ?? 0;
    const hi = members[i + 2];
    if (i + 3 <= members.length && members[i + 1] === 0x2d && hi !== undefined) {
      specs.push([lo, hi]);
      i += 3;
    } else {
      specs.push([lo, lo]);
      i += 1;
    }
  }
  return specs;
}

function hex(cp: number): string {
  return `\\x{${cp.toString(16).toUpperCase()}}`;
}

function rangeText([lo, hi]: CharSpec): string {
  return lo === hi ? hex(lo) : `${hex(lo)}-${hex(hi)}`;
}

/** Members of a positive class; `/` is carved out because classes never match a separator. */
function withinRanges(specs: readonly CharSpec[]): CharSpec[] {
  const out: CharSpec[] = [];
  for (const [lo, hi] of specs) {
    if (lo > hi) continue;
    if (lo <= SLASH && SLASH <= hi) {
      if (lo < SLASH) out.push([lo, SLASH - 1]);
      if (hi > SLASH) out.push([SLASH + 1, hi]);
    } else {
      out.push([lo, hi]);
    }
  }
  return out;
}

function tokenToRe2(token: GlobToken, isLast: boolean): string {
  switch (token.t) {
    case "char":
      return hex(token.cp);
    case "anyChar":
      return "[^/]";
    case "anySeq":
      return "[^/]*";
    case "anyRecursive":
      // `**/` is empty or a run ending in `/`; a final `**` also swallows the rest (the crate's
      // search falls through to "end of pattern" once the input is exhausted).
      return isLast ? "(?s:.*)" : "(?s:.*/)?";
    case "within": {
      const ranges = withinRanges(token.specs);
      return ranges.length === 0 ? NEVER : `[${ranges.map(rangeText).join("")}]`;
    }
    case "except": {
      const ranges = token.specs.filter(([lo, hi]) => lo <= hi);
      return `[^${ranges.map(rangeText).join("")}${hex(SLASH)}]`;
    }
  }
}

/** The RE2 source equivalent to a token list, anchored at both ends. */
export function buildGlobRe2Source(tokens: readonly GlobToken[]): string {
  const body = tokens.map((token, index) => tokenToRe2(token, index === tokens.length - 1)).join("");
  return `^${body}$`;
}

/** Compile glob text into a matcher; the error is the crate's `Pattern syntax error …` text. */
export function compileGlob(pattern: string): CompileResult<PathMatcher> {
  const parsed = parseGlob(pattern);
  if (!parsed.ok) return parsed;
  try {
    return { ok: true, value: new RE2(buildGlobRe2Source(parsed.value)) };
  } catch (error) {
    // Our own translation failed to compile: refuse rather than guess (fail closed).
    return { ok: false, error: `Pattern could not be compiled: ${(error as Error).message}` };
  }
}

/** Escape text as glob data, like `glob::Pattern::escape`: `?`, `*`, `[`, `]` become `[?]` etc. */
export function escapeGlobLiteral(text: string): string {
  let out = "";
  for (const ch of text) out += ch === "?" || ch === "*" || ch === "[" || ch === "]" ? `[${ch}]` : ch;
  return out;
}
