// Entry syntax: how a raw `[read_paths]` string is classified and how its errors are worded.
// The reason texts are observable upstream behaviour (spec §2.7); keep them byte-for-byte.

/** A compile result: the value, or the full agent-facing error text. */
export type CompileResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/** The reasons an entry is refused, as they follow `read_paths entry '<raw>': `. */
export const ENTRY_REASONS = {
  globEmpty: "glob pattern is empty",
  regexEmpty: "regex pattern is empty",
  tildeUser: "only '~/' home expansion is supported",
  noHome: "no home directory resolved for '~' expansion",
  regexRelative:
    "regex entries must start with '/', a drive letter, or '~/'; use 'glob:' for workdir-relative patterns",
  globEscapesRoot: "relative pattern escapes the filesystem root",
  globDotComponent:
    "glob patterns cannot contain '.' or '..' components (relative entries fold them against the workdir at the start only)",
  // Deliberate improvement (DESIGN.md §5): upstream splices the body into `^(?:…)$` as text.
  regexEscapesAnchors:
    "regex escapes its anchors (unbalanced ')' or verbose-mode comment); write one complete pattern",
  // Ours, fail-closed: Rust strings cannot hold lone surrogates, so upstream never sees these.
  notUnicode: "entry is not valid Unicode (it contains a lone surrogate)",
  tooLong: "entry is longer than 4096 characters",
} as const;

/** The one error that does not name its entry. */
export const EMPTY_ENTRY_ERROR = "read_paths entry is empty";

/** Longest entry accepted; a path is at most PATH_MAX (4096) bytes, and patterns are compiled once per run. */
export const MAX_ENTRY_LENGTH = 4096;

/** Format an entry error the way upstream names entries. */
export function formatEntryError(raw: string, reason: string): string {
  return `read_paths entry '${raw}': ${reason}`;
}

/** What a raw entry is, by its prefix (case-sensitive, checked `regex:` first). */
export type EntryForm =
  | { readonly kind: "empty" }
  | { readonly kind: "regex"; readonly text: string }
  | { readonly kind: "glob"; readonly text: string }
  | { readonly kind: "exact"; readonly text: string };

/** The entry prefixes, exact and case-sensitive; `regex:` is checked first. */
export const ENTRY_PREFIXES = { regex: "regex:", glob: "glob:" } as const;

/** An entry split at its prefix: the one parser of `regex:`/`glob:` (no prefix is `exact`, blank text included). */
export function splitEntryPrefix(raw: string): Exclude<EntryForm, { kind: "empty" }> {
  if (raw.startsWith(ENTRY_PREFIXES.regex)) return { kind: "regex", text: raw.slice(ENTRY_PREFIXES.regex.length) };
  if (raw.startsWith(ENTRY_PREFIXES.glob)) return { kind: "glob", text: raw.slice(ENTRY_PREFIXES.glob.length) };
  return { kind: "exact", text: raw };
}

/** Classify a raw entry (spec §2.1). Only the emptiness test trims, with Rust's notion of whitespace. */
export function parseEntryForm(raw: string): EntryForm {
  return isBlank(raw) ? { kind: "empty" } : splitEntryPrefix(raw);
}

/** Glob text as the dialect reads it: backslashes are `/` on every OS, Linux included (spec §2.4, glob-035). */
export function normalizeGlobText(text: string): string {
  return text.replaceAll("\\", "/");
}

/** Characters that end the literal start of a pattern: glob metacharacters (no braces: they are literal) and regex ones. */
const LITERAL_STOPS = { glob: "*?[", regex: "\\.^$|?*+()[]{}" } as const;

/** The literal text a pattern starts with, up to its first metacharacter. */
export function computeLiteralPrefix(kind: "glob" | "regex", text: string): string {
  const stops = LITERAL_STOPS[kind];
  for (let i = 0; i < text.length; i += 1) {
    if (stops.includes(text.charAt(i))) return text.slice(0, i);
  }
  return text;
}

/**
 * The literal directory an absolute entry starts with (`/data/x` for `glob:/data/x/**` and `glob:\data\x\**`),
 * or undefined for home-relative and relative entries. What it names lies above everything the entry matches.
 */
export function computeLiteralRoot(raw: string): string | undefined {
  const form = splitEntryPrefix(raw);
  const text = form.kind === "glob" ? normalizeGlobText(form.text) : form.text;
  if (!text.startsWith("/")) return undefined;
  let root = text;
  if (form.kind !== "exact") {
    const prefix = computeLiteralPrefix(form.kind, text);
    if (prefix !== text) root = text.slice(0, Math.max(prefix.lastIndexOf("/"), 1));
  }
  const trimmed = root.replace(/\/+$/, "");
  return trimmed === "" ? "/" : trimmed;
}

/**
 * Whether pattern text starts like an absolute path: `/`, or an ASCII letter and `:`.
 * Purely textual and the same on every OS, so `[A-Z]:/x` is not absolute-shaped.
 */
export function isAbsoluteShaped(text: string): boolean {
  if (text.startsWith("/")) return true;
  const first = text.charCodeAt(0);
  const isLetter = (first >= 0x41 && first <= 0x5a) || (first >= 0x61 && first <= 0x7a);
  return isLetter && text.charAt(1) === ":";
}

/** Refusals we add before upstream's own checks; `null` when the entry may go on. */
export function checkEntryBounds(raw: string): string | null {
  if (raw.length > MAX_ENTRY_LENGTH) return ENTRY_REASONS.tooLong;
  if (hasLoneSurrogate(raw)) return ENTRY_REASONS.notUnicode;
  return null;
}

/** Rust's `char::is_whitespace` is Unicode White_Space, which differs from JS `trim` (U+0085, U+FEFF). */
function isRustWhitespace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) ||
    code === 0x20 ||
    code === 0x85 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000
  );
}

function isBlank(raw: string): boolean {
  for (let i = 0; i < raw.length; i += 1) {
    if (!isRustWhitespace(raw.charCodeAt(i))) return false;
  }
  return true;
}

function hasLoneSurrogate(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i += 1;
    } else if (code >= 0xdc00 && code <= 0xdfff) {
      return true;
    }
  }
  return false;
}
