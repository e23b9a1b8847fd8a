// Binding raw entries to a run: tilde and workdir splicing, then glob or regex compilation (spec §3).
import {
  checkEntryBounds,
  EMPTY_ENTRY_ERROR,
  ENTRY_REASONS,
  formatEntryError,
  isAbsoluteShaped,
  normalizeGlobText,
  parseEntryForm,
  type CompileResult,
} from "./entry.ts";
import { compileGlob, escapeGlobLiteral, type PathMatcher } from "./glob.ts";
import { compileAnchoredRegex, escapeRegexLiteral } from "./regex.ts";

/** What entries are compiled against. `home` undefined means no home could be resolved. */
export interface CompileContext {
  readonly workdir: string;
  readonly home: string | undefined;
}

/** One compiled entry; `raw` is the entry exactly as written. */
export type CompiledEntry =
  | { readonly kind: "exact"; readonly raw: string; readonly root: string }
  | { readonly kind: "glob"; readonly raw: string; readonly pattern: string; readonly matcher: PathMatcher }
  | { readonly kind: "regex"; readonly raw: string; readonly source: string; readonly matcher: PathMatcher };

/** A compiled list of entries, in order. */
export interface ReadPathSet {
  readonly entries: readonly CompiledEntry[];
}

/** The fixed context declarations are checked against when a manifest is parsed (spec §2.7). */
export const VALIDATION_CONTEXT: CompileContext = { workdir: "/validate/a/b/c/d/e/f/g/h", home: "/validate-home" };

type Step<T> = { ok: true; value: T } | { ok: false; reason: string };

/** Rust's `Path::join`: an absolute tail replaces the base; an empty base adds no separator. */
function joinPath(base: string, tail: string): string {
  if (tail.startsWith("/") || base === "") return tail;
  return base.endsWith("/") ? base + tail : `${base}/${tail}`;
}

/** Splice the home in front of a `~` text, or refuse `~user` forms and a missing home. */
function expandTilde(afterTilde: string, home: string | undefined, escape: (home: string) => string): Step<string> {
  if (!(afterTilde === "" || afterTilde.startsWith("/"))) return { ok: false, reason: ENTRY_REASONS.tildeUser };
  if (home === undefined) return { ok: false, reason: ENTRY_REASONS.noHome };
  return { ok: true, value: escape(home) + afterTilde };
}

function resolveExact(raw: string, ctx: CompileContext): Step<string> {
  if (!raw.startsWith("~")) return { ok: true, value: raw.startsWith("/") ? raw : joinPath(ctx.workdir, raw) };
  const after = raw.slice(1);
  const hasSeparator = after.startsWith("/") || after.startsWith("\\");
  if (after !== "" && !hasSeparator) return { ok: false, reason: ENTRY_REASONS.tildeUser };
  if (ctx.home === undefined) return { ok: false, reason: ENTRY_REASONS.noHome };
  const sub = after.slice(1);
  return { ok: true, value: sub === "" ? ctx.home : joinPath(ctx.home, sub) };
}

/**
 * Fold a leading run of `./` and `../` into the workdir (spec §3.3); the workdir is glob data, so
 * it is escaped.
 */
function foldRelativeGlob(text: string, workdir: string): Step<string> {
  const base = workdir.split("/");
  while (base.length > 1 && base[base.length - 1] === "") base.pop();
  let rest = text;
  for (;;) {
    if (rest.startsWith("./")) {
      rest = rest.slice(2);
    } else if (rest.startsWith("../")) {
      if (base.length <= 1) return { ok: false, reason: ENTRY_REASONS.globEscapesRoot };
      base.pop();
      rest = rest.slice(3);
    } else {
      break;
    }
  }
  const prefix = escapeGlobLiteral(base.join("/"));
  return { ok: true, value: rest === "" ? prefix : `${prefix}/${rest}` };
}

function compileGlobEntry(raw: string, rest: string, ctx: CompileContext): Step<CompiledEntry> {
  if (rest === "") return { ok: false, reason: ENTRY_REASONS.globEmpty };
  // The dialect has no backslash escape, so turning `\` into `/` loses nothing.
  const text = normalizeGlobText(rest);
  let spliced: Step<string>;
  if (text.startsWith("~")) spliced = expandTilde(text.slice(1), ctx.home, escapeGlobLiteral);
  else if (isAbsoluteShaped(text)) spliced = { ok: true, value: text };
  else spliced = foldRelativeGlob(text, ctx.workdir);
  if (!spliced.ok) return spliced;
  const pattern = spliced.value;
  if (pattern.split("/").some((part) => part === "." || part === "..")) {
    return { ok: false, reason: ENTRY_REASONS.globDotComponent };
  }
  const compiled = compileGlob(pattern);
  if (!compiled.ok) return { ok: false, reason: `invalid glob: ${compiled.error}` };
  return { ok: true, value: { kind: "glob", raw, pattern, matcher: compiled.value } };
}

function compileRegexEntry(raw: string, rest: string, ctx: CompileContext): Step<CompiledEntry> {
  if (rest === "") return { ok: false, reason: ENTRY_REASONS.regexEmpty };
  let body: Step<string>;
  // No `~\` form for regexes: there the backslash is an escape.
  if (rest.startsWith("~")) body = expandTilde(rest.slice(1), ctx.home, escapeRegexLiteral);
  else if (isAbsoluteShaped(rest)) body = { ok: true, value: rest };
  else body = { ok: false, reason: ENTRY_REASONS.regexRelative };
  if (!body.ok) return body;
  const compiled = compileAnchoredRegex(body.value);
  if (!compiled.ok) return compiled;
  return { ok: true, value: { kind: "regex", raw, source: compiled.value.source, matcher: compiled.value.matcher } };
}

/** Compile one entry against a run; the error is the full `read_paths entry '<raw>': …` text. */
export function compileEntry(raw: string, ctx: CompileContext): CompileResult<CompiledEntry> {
  const form = parseEntryForm(raw);
  if (form.kind === "empty") return { ok: false, error: EMPTY_ENTRY_ERROR };
  const bound = checkEntryBounds(raw);
  if (bound !== null) return { ok: false, error: formatEntryError(raw, bound) };
  let step: Step<CompiledEntry>;
  if (form.kind === "regex") step = compileRegexEntry(raw, form.text, ctx);
  else if (form.kind === "glob") step = compileGlobEntry(raw, form.text, ctx);
  else {
    const root = resolveExact(raw, ctx);
    step = root.ok ? { ok: true, value: { kind: "exact", raw, root: root.value } } : root;
  }
  return step.ok ? { ok: true, value: step.value } : { ok: false, error: formatEntryError(raw, step.reason) };
}

/** Compile a list of entries; the first invalid entry aborts the whole list. */
export function compileReadPathSet(raws: readonly string[], ctx: CompileContext): CompileResult<ReadPathSet> {
  const entries: CompiledEntry[] = [];
  for (const raw of raws) {
    const compiled = compileEntry(raw, ctx);
    if (!compiled.ok) return compiled;
    entries.push(compiled.value);
  }
  return { ok: true, value: { entries } };
}

/** Check one declared entry's syntax without a run, against the fixed validation context. */
export function validateEntrySyntax(raw: string): { readonly ok: true } | { readonly ok: false; readonly error: string } {
  const compiled = compileEntry(raw, VALIDATION_CONTEXT);
  return compiled.ok ? { ok: true } : compiled;
}

/** The home `~` means: `LEVIATH_HOME` when set (even to ""), else the OS home, else none. */
export function resolveLeviathHome(env: Readonly<Record<string, string | undefined>>, osHome: string | undefined): string | undefined {
  const override = env.LEVIATH_HOME;
  return override !== undefined ? override : osHome;
}
