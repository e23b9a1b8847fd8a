// Tokens with identity inside an argument's text (issue 40, argument provenance): the links, e-mail addresses, account
// numbers, phone numbers and file paths a message, a post or a mail body carries. Provenance matches whole argument
// values; a reaching call can still carry an attacker's link inside a reworded body, so the integrity gate also asks,
// for each such token, whether it occurs only in untrusted text. Pure and bounded: at most MAX_TOKEN_SCAN_CHARS of a
// call's text are scanned and at most MAX_IDENTITY_TOKENS tokens kept; past either the caller fails closed.

/** Characters of a call's argument text scanned for tokens; past it the scan reports `overflow`. */
export const MAX_TOKEN_SCAN_CHARS = 65_536;
/** Tokens kept per call; past it the scan reports `overflow`. */
export const MAX_IDENTITY_TOKENS = 128;

/** The kinds of token with identity: who or where a text points its reader to, or whose data it names. */
export type IdentityTokenKind = "url" | "email" | "account" | "phone" | "path";

/** One token found in a text. */
export interface IdentityToken {
  readonly kind: IdentityTokenKind;
  /** As written, without trailing punctuation. */
  readonly text: string;
}

// Each pattern, in the order tried; a span matched by one is not matched again by a later one. Each starts only where
// a run of its characters starts (a lookbehind) and bounds what could repeat, so a scan is linear in the text: no
// input makes one backtrack over the whole text from every position. Regex literals, not built from any input.
const hasDigit = (t: string): boolean => /\d/u.test(t);
const PATTERNS: ReadonlyArray<readonly [IdentityTokenKind, RegExp, (text: string) => boolean]> = [
  // A URL with a scheme; an e-mail address; a host starting with "www."; a dotted host followed by a path. Each with
  // a cheap test of a character it cannot do without, so a text with none of them costs no scan.
  ["url", /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,31}:\/\/[^\s<>"'()[\]{}|\\^`]+/giu, (t) => t.includes("://")],
  ["email", /(?<![a-z0-9._%+-])[a-z0-9._%+-]{1,64}@[a-z0-9-]+(?:\.[a-z0-9-]+)+/giu, (t) => t.includes("@")],
  ["url", /(?<![a-z0-9.-])www\.[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:\/[^\s<>"'()[\]{}|\\^`]*)?/giu, (t) => /www\./iu.test(t)],
  ["url", /(?<![a-z0-9.-])(?:[a-z0-9-]+\.)+[a-z]{2,24}\/[^\s<>"'()[\]{}|\\^`]*/giu, (t) => t.includes("/")],
  // An IBAN-like account number (two letters, two check digits, 10 to 30 letters or digits).
  ["account", /\b[a-z]{2}\d{2}[a-z0-9]{10,30}\b/giu, hasDigit],
  // A phone or account number: 7 to 20 digits with the separators phone numbers are written with.
  ["phone", /(?<![\w+])\+?\d[\d ().-]{5,28}\d(?![\w])/gu, hasDigit],
  // A path of at least two segments, absolute or from home.
  ["path", /(?<![\w/.~])~?(?:\/[\w.-]+){2,}\/?/gu, (t) => t.includes("/")],
];

const TRAILING = /[.,;:!?]+$/u;

/** Whether a phone-like match has the digits of a phone or account number (7 to 20), not a date or an amount. */
function isPhoneLike(text: string): boolean {
  const digits = text.replace(/\D/gu, "").length;
  if (digits < 7 || digits > 20) return false;
  // A date or a time (2024-05-19, 10:00) is not one; an amount with decimals (1,234.56) neither.
  return !/^\d{4}-\d{2}-\d{2}/u.test(text) && !/^\d{1,3}(?:,\d{3})*\.\d{2}$/u.test(text);
}

/**
 * The tokens with identity in `texts`, or `overflow` when their total length or the tokens found exceed the bounds
 * (the caller then treats every argument as untrusted: fails closed).
 */
export function findIdentityTokens(texts: readonly string[]): IdentityToken[] | "overflow" {
  let chars = 0;
  for (const t of texts) chars += t.length;
  if (chars > MAX_TOKEN_SCAN_CHARS) return "overflow";
  const out: IdentityToken[] = [];
  for (const text of texts) {
    const taken: Array<readonly [number, number]> = [];
    for (const [kind, pattern, possible] of PATTERNS) {
      if (!possible(text)) continue;
      for (const m of text.matchAll(pattern)) {
        const start = m.index;
        const raw = m[0].replace(TRAILING, "");
        const end = start + raw.length;
        if (taken.some(([s, e]) => start < e && end > s)) continue;
        if (kind === "phone" && !isPhoneLike(raw)) continue;
        taken.push([start, end]);
        out.push({ kind, text: raw });
        if (out.length > MAX_IDENTITY_TOKENS) return "overflow";
      }
    }
  }
  return out;
}
