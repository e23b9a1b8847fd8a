// The syntax errors of Rust's `regex` (its regex-syntax parser) that RE2 does not make: RE2 accepts these texts and
// gives them a meaning of its own, so an entry upstream refuses would read something here. `(?i)*` and `(?i){2}`
// (RE2 repeats the character before the flags: `/a(?i)*` is `/a*`), `(?)`, `(?ii)`, `(?i-i)`, a capture group name
// Rust does not allow (`(?P<1n>…)`), a class range whose end is a class (`[\d-z]`, which RE2 reads as `\d`, `-`
// and `z`). Each is refused with regex-syntax's own words. The walk reads the body as Rust does; what it does not
// judge (escapes, repetition counts, look-around, unbalanced groups) is left to regex-dialect.ts and RE2.

/** regex-syntax's messages for the errors checked here. */
export const RUST_SYNTAX_ERRORS = {
  repetitionMissing: "repetition operator missing expression",
  flagDuplicate: "duplicate flag",
  flagRepeatedNegation: "flag negation operator repeated",
  flagDanglingNegation: "dangling flag negation operator",
  groupNameEmpty: "empty capture group name",
  groupNameInvalid: "invalid capture group character",
  groupNameDuplicate: "duplicate capture group name",
  classRangeLiteral: "invalid range boundary, must be a literal",
} as const;

type SyntaxError = (typeof RUST_SYNTAX_ERRORS)[keyof typeof RUST_SYNTAX_ERRORS];

/** The escapes that stand for a class, never one character (so never a range's end). */
const CLASS_ESCAPES = new Set(["d", "D", "w", "W", "s", "S", "p", "P"]);
const FLAG_LETTERS = "imsUuxR";
const ALPHABETIC = /^\p{Alphabetic}$/u;
const ALPHANUMERIC = /^[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}]$/u;

/** Whether `c` may be in a capture group name (first: may begin one), as regex-syntax's `is_capture_char`. */
export function isCaptureNameChar(c: string, first: boolean): boolean {
  if (c === "_" || ALPHABETIC.test(c)) return true;
  return !first && (c === "." || c === "[" || c === "]" || ALPHANUMERIC.test(c));
}

/** Where the walk is: whether the last thing read can be repeated, and the group names seen. */
interface Walk {
  readonly cs: readonly string[];
  i: number;
  /** False at the start, after `(`, `|` or a flag group: a repetition here has nothing to repeat. */
  repeatable: boolean;
  readonly names: Set<string>;
}

/** The first of these errors in a Rust regex body, in regex-syntax's words; undefined when it has none of them. */
export function findRustSyntaxError(body: string): SyntaxError | undefined {
  const w: Walk = { cs: Array.from(body), i: 0, repeatable: false, names: new Set() };
  while (w.i < w.cs.length) {
    const error = step(w);
    if (error !== undefined) return error;
  }
  return undefined;
}

function step(w: Walk): SyntaxError | undefined {
  const c = w.cs[w.i] ?? "";
  if (c === "\\") {
    w.i = skipEscape(w.cs, w.i);
    w.repeatable = true;
    return undefined;
  }
  if (c === "[") {
    const end = readClass(w.cs, w.i);
    if (typeof end === "string") return end;
    w.i = end;
    w.repeatable = true;
    return undefined;
  }
  if (c === "(") return readGroupOpen(w);
  if (c === "*" || c === "+" || c === "?" || (c === "{" && isCountedRepetition(w.cs, w.i))) {
    if (!w.repeatable) return RUST_SYNTAX_ERRORS.repetitionMissing;
    w.i = c === "{" ? w.cs.indexOf("}", w.i) + 1 : w.i + 1;
    return undefined;
  }
  w.repeatable = c !== "|";
  w.i += 1;
  return undefined;
}

/** Whether the `{` at `i` opens `{n}`, `{n,}` or `{n,m}` (any other is refused by regex-dialect.ts). */
function isCountedRepetition(cs: readonly string[], i: number): boolean {
  let j = i + 1;
  const digits = () => {
    const from = j;
    while (/^[0-9]$/.test(cs[j] ?? "")) j += 1;
    return j > from;
  };
  if (!digits()) return false;
  if (cs[j] === ",") {
    j += 1;
    digits();
  }
  return cs[j] === "}";
}

/** The index after the escape at `i`: `\x{…}`, `\p{…}` and the like whole. */
function skipEscape(cs: readonly string[], i: number): number {
  const c = cs[i + 1];
  if (c !== undefined && "xuUpP".includes(c) && cs[i + 2] === "{") {
    const close = cs.indexOf("}", i + 3);
    return close < 0 ? cs.length : close + 1;
  }
  if (c === "p" || c === "P") return i + 3;
  if (c === "x") return i + 4;
  if (c === "u") return i + 6;
  if (c === "U") return i + 10;
  return i + 2;
}

/** `(`, `(?flags)`, `(?flags:`, `(?P<name>` or `(?<name>`. */
function readGroupOpen(w: Walk): SyntaxError | undefined {
  const { cs } = w;
  w.repeatable = false;
  if (cs[w.i + 1] !== "?") {
    w.i += 1;
    return undefined;
  }
  const named = cs[w.i + 2] === "<" && cs[w.i + 3] !== "=" && cs[w.i + 3] !== "!" ? w.i + 3 : cs[w.i + 2] === "P" && cs[w.i + 3] === "<" ? w.i + 4 : -1;
  if (named >= 0) return readGroupName(w, named);
  return readFlags(w);
}

function readGroupName(w: Walk, start: number): SyntaxError | undefined {
  const close = w.cs.indexOf(">", start);
  // Unclosed: regex-dialect.ts refuses it.
  if (close < 0) {
    w.i = w.cs.length;
    return undefined;
  }
  const name = w.cs.slice(start, close);
  if (name.length === 0) return RUST_SYNTAX_ERRORS.groupNameEmpty;
  if (!name.every((c, k) => isCaptureNameChar(c, k === 0))) return RUST_SYNTAX_ERRORS.groupNameInvalid;
  const text = name.join("");
  if (w.names.has(text)) return RUST_SYNTAX_ERRORS.groupNameDuplicate;
  w.names.add(text);
  w.i = close + 1;
  return undefined;
}

/** `(?flags)` or `(?flags:`; anything else after `(?` is left for the others to refuse. */
function readFlags(w: Walk): SyntaxError | undefined {
  const { cs } = w;
  let j = w.i + 2;
  const seen = new Set<string>();
  let negated = false;
  let danglingNegation = false;
  for (; j < cs.length && (FLAG_LETTERS.includes(cs[j] ?? "") || cs[j] === "-"); j++) {
    const c = cs[j] ?? "";
    if (c === "-") {
      if (negated) return RUST_SYNTAX_ERRORS.flagRepeatedNegation;
      negated = true;
      danglingNegation = true;
      continue;
    }
    if (seen.has(c)) return RUST_SYNTAX_ERRORS.flagDuplicate;
    seen.add(c);
    danglingNegation = false;
  }
  const end = cs[j];
  w.i = j + 1;
  if (end !== ")" && end !== ":") return undefined;
  if (danglingNegation) return RUST_SYNTAX_ERRORS.flagDanglingNegation;
  // regex-syntax reads `(?)` as a repetition with nothing to repeat.
  if (end === ")" && seen.size === 0) return RUST_SYNTAX_ERRORS.repetitionMissing;
  return undefined;
}

/** A class item: one character (`literal`), or a set of them (a class escape, `[:alpha:]`). */
type ClassItem = { readonly literal: boolean; readonly next: number };

function readClassItem(cs: readonly string[], j: number): ClassItem {
  const c = cs[j];
  if (c === "\\") return { literal: !CLASS_ESCAPES.has(cs[j + 1] ?? ""), next: skipEscape(cs, j) };
  if (c === "[" && cs[j + 1] === ":") {
    const close = cs.indexOf("]", j + 2);
    if (close > j && cs[close - 1] === ":") return { literal: false, next: close + 1 };
  }
  return { literal: true, next: j + 1 };
}

/** The index after the class opening at `i`, or the error of a range with a class for an end. */
function readClass(cs: readonly string[], i: number): number | SyntaxError {
  let j = i + 1;
  if (cs[j] === "^") j += 1;
  // A `]` (or `-`) first is a member.
  if (cs[j] === "]") j += 1;
  while (j < cs.length && cs[j] !== "]") {
    const first = readClassItem(cs, j);
    j = first.next;
    // `-` before `]` is a member, not a range.
    if (cs[j] !== "-" || cs[j + 1] === "]" || cs[j + 1] === undefined) continue;
    const second = readClassItem(cs, j + 1);
    if (!first.literal || !second.literal) return RUST_SYNTAX_ERRORS.classRangeLiteral;
    j = second.next;
  }
  return j + 1;
}
