/** One problem found while loading a file: where it is, and what is wrong, in words a person can act on. */
export interface LoadIssue {
  file: string;
  /** Where in the document: a TOML table/key path (`[stages.build.sandbox] netwrok`) or a YAML field path. */
  where?: string;
  line?: number;
  column?: number;
  message: string;
}

/** The result of loading something: the value, or every issue found. */
export type Loaded<T> = { ok: true; value: T; warnings: LoadIssue[] } | { ok: false; issues: LoadIssue[] };

/** `file:line:col: where: message`, omitting the parts that are unknown. */
export function formatIssue(issue: LoadIssue): string {
  let head = issue.file;
  if (issue.line !== undefined) head += `:${issue.line}`;
  if (issue.line !== undefined && issue.column !== undefined) head += `:${issue.column}`;
  return issue.where ? `${head}: ${issue.where}: ${issue.message}` : `${head}: ${issue.message}`;
}
