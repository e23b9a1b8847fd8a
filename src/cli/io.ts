/** What a command may touch of the outside world, passed in so the CLI runs the same in tests and for real. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** The OS home directory, or undefined when none resolves. */
  homedir: string | undefined;
}

/** Exit statuses every subcommand shares. */
export const EXIT = { ok: 0, refused: 1, usage: 2 } as const;

/** A usage error: printed with the command's usage line, exit status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
