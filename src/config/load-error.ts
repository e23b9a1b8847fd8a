/** One problem found while loading a file: where it is, and what is wrong, in words a person can act on. */
export interface LoadIssue {
  file: string;
  /** Where in the document: a TOML table/key path (`[stages.build.sandbox] netwrok`) or a YAML field path. */
  where?: string;
  line?: number;
  column?: number;
  message: string;
  /**
   * Set on an upstream key the operator has no use for: `table` is `""` at the top level or `[security]`-style.
   * These are summarised in one block rather than listed one warning each.
   */
  unused?: { table: string; key: string };
}

/** The result of loading something: the value, or every issue found. */
export type Loaded<T> = { ok: true; value: T; warnings: LoadIssue[] } | { ok: false; issues: LoadIssue[] };

/** `file:line:col: where: message`, omitting the parts that are unknown or that the message already starts with. */
export function formatIssue(issue: LoadIssue): string {
  let head = issue.file;
  if (issue.line !== undefined) head += `:${issue.line}`;
  if (issue.line !== undefined && issue.column !== undefined) head += `:${issue.column}`;
  // Upstream-shaped messages name their own table (`[sandbox] has unknown key 'x'`); do not say it twice.
  const named = issue.where?.startsWith("[") === true && issue.message.startsWith("[");
  return issue.where && !named ? `${head}: ${issue.where}: ${issue.message}` : `${head}: ${issue.message}`;
}

const WRAP = 100;

function wrapKeys(label: string, keys: readonly string[]): string[] {
  const lines: string[] = [];
  let line = `  ${label}`;
  for (const [i, key] of keys.entries()) {
    const piece = `${i === 0 ? " " : ", "}${key}`;
    if (line.length + piece.length > WRAP && i > 0) {
      lines.push(`${line},`);
      line = `  ${" ".repeat(label.length)} ${key}`;
    } else line += piece;
  }
  lines.push(line);
  return lines;
}

/**
 * Warnings as printed lines (each prefixed `warning: `): every ordinary warning on its own, and the unused upstream
 * keys of each file in one block, grouped by table, so importing a full upstream config stays readable.
 */
export function formatWarnings(warnings: readonly LoadIssue[]): string[] {
  const out = warnings.filter((w) => w.unused === undefined).map((w) => `warning: ${formatIssue(w)}`);
  const byFile = new Map<string, Map<string, string[]>>();
  for (const w of warnings) {
    if (w.unused === undefined) continue;
    const tables = byFile.get(w.file) ?? new Map<string, string[]>();
    byFile.set(w.file, tables);
    const keys = tables.get(w.unused.table) ?? [];
    tables.set(w.unused.table, [...keys, w.unused.key]);
  }
  for (const [file, tables] of byFile) {
    const count = [...tables.values()].reduce((n, keys) => n + keys.length, 0);
    out.push(`warning: ${file}: ${count} ${count === 1 ? "key is" : "keys are"} not used by the operator and not carried over:`);
    const width = Math.max(...[...tables.keys()].map((t) => (t === "" ? "top level" : t).length));
    for (const [table, keys] of tables) out.push(...wrapKeys((table === "" ? "top level" : table).padEnd(width), keys));
  }
  return out;
}
