import { parse, TomlError } from "smol-toml";
import type { LoadIssue } from "./load-error.ts";

/** A parsed TOML document with the source kept, so later checks can point at lines. */
export interface TomlDoc {
  file: string;
  source: string;
  data: Record<string, unknown>;
}

/** Parse TOML text; a syntax error carries smol-toml's line and column and its first message line. */
export function parseTomlDoc(file: string, source: string): { ok: true; doc: TomlDoc } | { ok: false; issue: LoadIssue } {
  try {
    return { ok: true, doc: { file, source, data: parse(source) as Record<string, unknown> } };
  } catch (err) {
    if (err instanceof TomlError) {
      const message = err.message.split("\n")[0]?.replace(/^Invalid TOML document: /, "") ?? "invalid TOML";
      return { ok: false, issue: { file, line: err.line, column: err.column, message: `invalid TOML: ${message}` } };
    }
    throw err;
  }
}

/** Split a header or dotted key into its keys, honouring quoted keys (`"a.b".c` is two keys). */
export function splitTomlKey(text: string): string[] {
  const keys: string[] = [];
  let cur = "";
  let quote: string | null = null;
  for (const ch of text.trim()) {
    if (quote) {
      if (ch === quote) quote = null;
      else cur += ch;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === ".") {
      keys.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  keys.push(cur.trim());
  return keys;
}

function headerOf(line: string): string[] | null {
  const t = line.trim();
  const m = t.startsWith("[[") ? t.slice(2, t.indexOf("]]")) : t.startsWith("[") ? t.slice(1, t.indexOf("]")) : null;
  return m === null ? null : splitTomlKey(m);
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Best-effort line (1-based) of `key` inside the table at `table`, or of the table's header when the key is
 * not found. Covers the forms upstream files use: headers, `key = value`, and `parent.key = value`.
 */
export function locateTomlLine(doc: TomlDoc, table: string[], key?: string): number | undefined {
  const lines = doc.source.split("\n");
  let current: string[] = [];
  let headerLine: number | undefined = table.length === 0 ? undefined : undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const header = headerOf(line);
    if (header) {
      current = header;
      if (same(header, table)) headerLine ??= i + 1;
      if (key !== undefined && same(header, [...table, key])) return i + 1;
      continue;
    }
    if (key === undefined) continue;
    const eq = line.indexOf("=");
    if (eq < 0 || line.trim().startsWith("#")) continue;
    const lhs = splitTomlKey(line.slice(0, eq));
    const full = [...current, ...lhs];
    if (same(full.slice(0, table.length + 1), [...table, key])) return i + 1;
  }
  return headerLine;
}

/** Render a key path the way a TOML author writes it: `[stages.build.sandbox]`. */
export function tomlTable(path: string[]): string {
  return `[${path.map((k) => (/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k))).join(".")}]`;
}

/** A plain object (a TOML table), as opposed to an array, a date or a scalar. */
export function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/** The order in which `[<parent>.<name>...]` tables first appear in the source (JS objects reorder numeric keys). */
export function tableOrder(doc: TomlDoc, parent: string): string[] {
  const order: string[] = [];
  for (const line of doc.source.split("\n")) {
    const h = headerOf(line);
    if (h && h.length >= 2 && h[0] === parent && !order.includes(h[1] ?? "")) order.push(h[1] ?? "");
  }
  const table = doc.data[parent];
  if (isTable(table)) for (const k of Object.keys(table)) if (!order.includes(k)) order.push(k);
  return order.filter((k) => isTable(table) && k in table);
}

/** Whether `full` begins with `path`. */
const startsWithPath = (full: string[], path: readonly string[]) => path.every((k, j) => full[j] === k);

/** The lines (0-based, end exclusive) of the `index`-th `[[array]]` table and its `[array.x]` sub-tables; undefined when it has no header. */
function arrayEntryRange(lines: readonly string[], array: string, index: number): { start: number; end: number } | undefined {
  let seen = -1;
  let start = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? "").trim();
    const header = headerOf(line);
    if (header === null) continue;
    const opensEntry = line.startsWith("[[") && same(header, [array]);
    if (start >= 0 && (opensEntry || header[0] !== array || line.startsWith("[["))) return { start, end: i };
    if (opensEntry && ++seen === index) start = i;
  }
  return start >= 0 ? { start, end: lines.length } : undefined;
}

/**
 * Best-effort line (1-based) of `path` (a key, or a key and a sub-key: `["headers", "Authorization"]`) inside the
 * `index`-th (0-based) `[[array]]` table, else of that table's header. Covers `key = value`, dotted keys and
 * `[array.key]` sub-tables; an entry written inline (`array = [{ ... }]`) has no header, so no line.
 */
export function locateArrayEntryLine(doc: TomlDoc, array: string, index: number, path: readonly string[] = []): number | undefined {
  const lines = doc.source.split("\n");
  const range = arrayEntryRange(lines, array, index);
  if (range === undefined) return undefined;
  let sub: string[] = [];
  for (let i = range.start + 1; i < range.end && path.length > 0; i++) {
    const line = (lines[i] ?? "").trim();
    const header = headerOf(line);
    if (header !== null) sub = header.slice(1);
    const eq = line.indexOf("=");
    const full = header !== null ? sub : eq < 0 || line.startsWith("#") ? [] : [...sub, ...splitTomlKey(line.slice(0, eq))];
    if (full.length > 0 && startsWithPath(full, path)) return i + 1;
  }
  return range.start + 1;
}
