// Translate a Rust-`regex` pattern body into RE2 syntax with the same meaning, or refuse it.
// Upstream compiles with Rust's engine; where RE2 would read the same text differently we either
// rewrite it (Unicode `\d`, `\s`, `\w`) or refuse the entry (fail closed, spec §4.4). The walk also
// tracks group depth, which is how a body that closes the anchoring group early is caught.
import { ENTRY_REASONS } from "./entry.ts";
import { expandPosixClass } from "./regex-posix.ts";

/** The RE2 text of a body, or why it is refused (a full reason, ready for the entry error). */
export type DialectResult = { readonly ok: true; readonly re2: string } | { readonly ok: false; readonly reason: string };

type Step = { readonly ok: true; readonly text: string; readonly next: number; readonly opens?: boolean } | { readonly ok: false; readonly reason: string };

const invalid = (detail: string): { ok: false; reason: string } => ({ ok: false, reason: `invalid regex: ${detail}` });

// Rust's Unicode Perl classes (UTS#18): `\w` is Alphabetic + Mark + Decimal_Number +
// Connector_Punctuation + Join_Control; `\s` is White_Space; `\d` is Decimal_Number. RE2's are ASCII.
const WORD = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";
const PERL_OUTSIDE: Readonly<Record<string, string>> = {
  d: "\\p{Nd}",
  D: "\\P{Nd}",
  s: "\\p{White_Space}",
  S: "\\P{White_Space}",
  w: `[${WORD}]`,
  W: `[^${WORD}]`,
};
const PERL_INSIDE: Readonly<Record<string, string>> = {
  d: "\\p{Nd}",
  D: "\\P{Nd}",
  s: "\\p{White_Space}",
  S: "\\P{White_Space}",
  w: WORD,
};

const HEX_DIGITS: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };
const REFUSALS = {
  backreference: "backreferences are not supported",
  lookAround: "look-around, including look-ahead and look-behind, is not supported",
  wordBoundary:
    "word boundaries (\\b, \\B, \\<, \\>) are Unicode-aware upstream but ASCII-only in RE2; they are not supported",
  notWordInClass: "\\W inside a character class is not supported; use [^...] around \\w instead",
  nestedClass: "nested character classes and class set operations (&&, --, ~~) are not supported; escape a literal '[' as \\[",
  brace: "'{' must open a counted repetition ({n}, {n,} or {n,m}); write a literal brace as \\{",
  flags: "the 'u', 'R' and 'x' flags are not supported",
  hex: "invalid hexadecimal escape",
  unclosedName: "unclosed group name",
  unclosedProperty: "unclosed \\p{...} property",
} as const;

/** Translate a Rust regex body to RE2, refusing what RE2 would read differently. */
export function translateRustRegex(body: string): DialectResult {
  const cs = Array.from(body);
  let out = "";
  let depth = 0;
  let i = 0;
  while (i < cs.length) {
    const c = cs[i];
    let step: Step;
    if (c === "\\") step = translateEscape(cs, i, false);
    else if (c === "[") step = translateClass(cs, i);
    else if (c === "(") step = translateGroupOpen(cs, i);
    else if (c === "{") step = translateRepetition(cs, i);
    else if (c === ")") {
      depth -= 1;
      if (depth < 0) return { ok: false, reason: ENTRY_REASONS.regexEscapesAnchors };
      step = { ok: true, text: ")", next: i + 1 };
    } else step = { ok: true, text: c ?? "", next: i + 1 };
    if (!step.ok) return step;
    if (step.opens === true) depth += 1;
    out += step.text;
    i = step.next;
  }
  return { ok: true, re2: out };
}

function hexEscape(cp: number): string {
  return `\\x{${cp.toString(16).toUpperCase()}}`;
}

function isAsciiAlnum(c: string): boolean {
  return (c >= "0" && c <= "9") || (c >= "A" && c <= "Z") || (c >= "a" && c <= "z");
}

function translateEscape(cs: readonly string[], i: number, inClass: boolean): Step {
  const c = cs[i + 1];
  // A trailing backslash is left for RE2 to reject.
  if (c === undefined) return { ok: true, text: "\\", next: i + 1 };
  if (c >= "0" && c <= "9") return invalid(REFUSALS.backreference);
  if (Object.hasOwn(HEX_DIGITS, c)) return translateHex(cs, i);
  if (c === "p" || c === "P") return copyProperty(cs, i);
  const perl = inClass ? PERL_INSIDE[c] : PERL_OUTSIDE[c];
  if (perl !== undefined) return { ok: true, text: perl, next: i + 2 };
  return translateOtherEscape(c, i, inClass);
}

/** The escapes left once digits, hex, properties and the Perl classes are handled: the single-letter ones, and literals. */
function translateOtherEscape(c: string, i: number, inClass: boolean): Step {
  if (c === "W") return invalid(REFUSALS.notWordInClass);
  if ("aftnrv".includes(c)) return { ok: true, text: `\\${c}`, next: i + 2 };
  if (c === "A" || c === "z") return inClass ? invalid(`\\${c} is not allowed in a character class`) : { ok: true, text: `\\${c}`, next: i + 2 };
  if ("bB<>".includes(c)) return invalid(REFUSALS.wordBoundary);
  const cp = c.codePointAt(0) ?? 0;
  // Rust accepts any ASCII non-alphanumeric escape as a literal; spelling it as a code point keeps
  // RE2 (and node-re2's own pre-translation) from reading anything into it.
  if (cp < 0x80 && !isAsciiAlnum(c)) return { ok: true, text: hexEscape(cp), next: i + 2 };
  return invalid(`unrecognized escape sequence \\${c}`);
}

/** `\xHH`, `\uHHHH`, `\UHHHHHHHH` or any of them with `{...}`, as Rust reads them. */
function translateHex(cs: readonly string[], i: number): Step {
  const kind = cs[i + 1] ?? "x";
  let digits = "";
  let next: number;
  if (cs[i + 2] === "{") {
    let j = i + 3;
    while (j < cs.length && cs[j] !== "}") digits += cs[j++];
    if (j >= cs.length) return invalid(REFUSALS.hex);
    next = j + 1;
  } else {
    const width = HEX_DIGITS[kind] ?? 2;
    digits = cs.slice(i + 2, i + 2 + width).join("");
    if (digits.length !== width) return invalid(REFUSALS.hex);
    next = i + 2 + width;
  }
  const significant = digits.replace(/^0+(?=.)/, "");
  if (digits.length === 0 || significant.length > 6 || ![...digits].every((d) => "0123456789abcdefABCDEF".includes(d))) {
    return invalid(REFUSALS.hex);
  }
  const cp = Number.parseInt(significant, 16);
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return invalid(REFUSALS.hex);
  return { ok: true, text: hexEscape(cp), next };
}

/** `\pL`, `\p{Greek}`: same names, same sets in both engines; an unknown name fails in RE2. */
function copyProperty(cs: readonly string[], i: number): Step {
  if (cs[i + 2] !== "{") {
    if (cs[i + 2] === undefined) return invalid(REFUSALS.unclosedProperty);
    return { ok: true, text: cs.slice(i, i + 3).join(""), next: i + 3 };
  }
  const close = cs.indexOf("}", i + 3);
  if (close < 0) return invalid(REFUSALS.unclosedProperty);
  return { ok: true, text: cs.slice(i, close + 1).join(""), next: close + 1 };
}

const FLAG_CHARS = "imsUuxR-";

function translateGroupOpen(cs: readonly string[], i: number): Step {
  if (cs[i + 1] !== "?") return { ok: true, text: "(", next: i + 1, opens: true };
  const a = cs[i + 2];
  const b = cs[i + 3];
  if (a === "=" || a === "!" || (a === "<" && (b === "=" || b === "!"))) return invalid(REFUSALS.lookAround);
  if (a === "<" || (a === "P" && b === "<")) return translateNamedGroup(cs, a === "<" ? i + 3 : i + 4);
  return translateFlagGroup(cs, i);
}

/** `(?<name>` or `(?P<name>`, the name starting at `start`: RE2 spells both `(?P<name>`. */
function translateNamedGroup(cs: readonly string[], start: number): Step {
  const close = cs.indexOf(">", start);
  if (close < 0) return invalid(REFUSALS.unclosedName);
  return { ok: true, text: `(?P<${cs.slice(start, close).join("")}>`, next: close + 1, opens: true };
}

/** `(?flags)` or `(?flags:`; any other `(?` is passed on for RE2 to refuse. */
function translateFlagGroup(cs: readonly string[], i: number): Step {
  let j = i + 2;
  let flags = "";
  while (j < cs.length && FLAG_CHARS.includes(cs[j] ?? "")) flags += cs[j++];
  const end = cs[j];
  if (end !== ")" && end !== ":") {
    // Not a flag group (`(?#`, `(?>`, `(?P=`…): RE2 refuses every one of these.
    return { ok: true, text: "(?", next: i + 2, opens: true };
  }
  const enabled = flags.split("-")[0] ?? "";
  // `(?x)` makes `#` start a comment that can swallow the closing `)$` of the anchor.
  if (enabled.includes("x")) return { ok: false, reason: ENTRY_REASONS.regexEscapesAnchors };
  if ([...flags].some((flag) => "uRx".includes(flag))) return invalid(REFUSALS.flags);
  return { ok: true, text: `(?${flags}${end}`, next: j + 1, opens: end === ":" };
}

/** Rust reads every unescaped `{` as a counted repetition; RE2 would take a malformed one literally. */
function translateRepetition(cs: readonly string[], i: number): Step {
  let j = i + 1;
  let text = "{";
  const digits = (): number => {
    const from = j;
    while (j < cs.length && (cs[j] ?? "") >= "0" && (cs[j] ?? "") <= "9") text += cs[j++];
    return j - from;
  };
  if (digits() === 0) return invalid(REFUSALS.brace);
  if (cs[j] === ",") {
    text += ",";
    j += 1;
    digits();
  }
  if (cs[j] !== "}") return invalid(REFUSALS.brace);
  return { ok: true, text: `${text}}`, next: j + 1 };
}

function translateClass(cs: readonly string[], i: number): Step {
  let out = "[";
  let j = i + 1;
  if (cs[j] === "^") {
    out += "^";
    j += 1;
  }
  // A leading `]` is a member; spelled as a code point so node-re2's class tracking stays in step.
  if (cs[j] === "]") {
    out += hexEscape(0x5d);
    j += 1;
  }
  while (j < cs.length) {
    const c = cs[j] ?? "";
    const pair = c + (cs[j + 1] ?? "");
    if (c === "]") return { ok: true, text: `${out}]`, next: j + 1 };
    if (pair === "&&" || pair === "--" || pair === "~~") return invalid(REFUSALS.nestedClass);
    let step: Step;
    if (c === "[") {
      const posix = expandPosixClass(cs, j);
      if (posix === null) return invalid(REFUSALS.nestedClass);
      step = { ok: true, text: posix.text, next: posix.next };
    } else if (c === "\\") step = translateEscape(cs, j, true);
    else step = { ok: true, text: c, next: j + 1 };
    if (!step.ok) return step;
    out += step.text;
    j = step.next;
  }
  // Unclosed: RE2 reports the missing `]`.
  return { ok: true, text: out, next: j };
}
