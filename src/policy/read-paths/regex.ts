// Anchored `regex:` entries compiled with RE2 (spec §2.5, §3.4, §4.4).
import RE2 from "re2";

import { ENTRY_REASONS } from "./entry.ts";
import type { PathMatcher } from "./glob.ts";
import { translateRustRegex } from "./regex-dialect.ts";
import { findRustSyntaxError } from "./regex-rust-syntax.ts";

/** A compiled `regex:` body: the upstream-style anchored source and the RE2 matcher. */
export interface AnchoredRegex {
  /** `^(?:<body>)$` in the entry's own (Rust) syntax; the report reads its literal prefix. */
  readonly source: string;
  readonly matcher: PathMatcher;
}

/** Why a body was refused: a full reason for `read_paths entry '<raw>': <reason>`. */
export type AnchoredRegexResult = { readonly ok: true; readonly value: AnchoredRegex } | { readonly ok: false; readonly reason: string };

// Rust's `regex::escape` set. Every one of these is a valid escape in RE2 and in our dialect walk,
// and keeping the same set keeps the report's literal-prefix samples identical to upstream.
const REGEX_META = new Set(["\\", ".", "+", "*", "?", "(", ")", "|", "[", "]", "{", "}", "^", "$", "#", "&", "-", "~"]);

/** Escape text (a home directory) so it matches only itself inside a regex. */
export function escapeRegexLiteral(text: string): string {
  let out = "";
  for (const ch of text) out += REGEX_META.has(ch) ? `\\${ch}` : ch;
  return out;
}

function engineMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Compile `^(?:body)$`. The body must stand on its own as a complete pattern: a body that closes
 * the group early or turns on verbose mode would escape the anchors, and is refused.
 */
export function compileAnchoredRegex(body: string): AnchoredRegexResult {
  const translated = translateRustRegex(body);
  if (!translated.ok) return translated;
  // What Rust refuses and RE2 would read in a meaning of its own (`(?i)*`, `[\d-z]`, ...).
  const rustError = findRustSyntaxError(body);
  if (rustError !== undefined) return { ok: false, reason: `invalid regex: ${rustError}` };
  try {
    // Compiled alone first: an unbalanced `)` fails here instead of pairing with our wrapper.
    new RE2(translated.re2);
  } catch (error) {
    const message = engineMessage(error);
    if (message.startsWith("unexpected )")) return { ok: false, reason: ENTRY_REASONS.regexEscapesAnchors };
    return { ok: false, reason: `invalid regex: ${message}` };
  }
  try {
    const matcher = new RE2(`^(?:${translated.re2})$`);
    return { ok: true, value: { source: `^(?:${body})$`, matcher } };
  } catch (error) {
    return { ok: false, reason: `invalid regex: ${engineMessage(error)}` };
  }
}
