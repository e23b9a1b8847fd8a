// Shell execution as a port: a local process standalone, `pods/exec` into the stage's sandbox pod in a
// cluster. Either way the command gets the policy's timeout and its output is read under the seed's caps.
import type { RunPolicy } from "../../api/run-policy.ts";
import type { ShellExecutorLabel } from "../../metrics/sidecar-metrics.ts";

/** One stage of the run policy. */
export type RunStage = RunPolicy["stages"][number];

/** One command to run. */
export interface ShellRequest {
  readonly command: string;
  readonly timeoutSeconds: number;
  readonly stage: RunStage;
}

/** How a command ended. `error` means it could not be run (or read) at all. */
export interface ShellResult {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  /** Set when the output passed a size cap: the cap's message; the command was stopped. */
  readonly capped?: string;
  readonly error?: string;
}

/** Runs shell commands somewhere. */
export interface ShellExecutor {
  readonly label: ShellExecutorLabel;
  run(req: ShellRequest): Promise<ShellResult>;
}

/** The outcome label of a result. */
export function computeShellOutcome(r: ShellResult): "exited" | "timed_out" | "capped" | "failed" {
  if (r.error !== undefined) return "failed";
  if (r.capped !== undefined) return "capped";
  return r.timedOut ? "timed_out" : "exited";
}

/**
 * The tool result the model reads: stdout, then stderr, then a note for a non-zero exit, a timeout or a cap.
 * Errors start with `[error]` so upstream's "no side effect" rule applies to them.
 */
export function buildShellResultText(r: ShellResult, timeoutSeconds: number): { text: string; isError: boolean } {
  if (r.error !== undefined) return { text: `[error] ${r.error}`, isError: true };
  let text = r.stdout;
  if (r.stderr !== "") text += (text === "" || text.endsWith("\n") ? "" : "\n") + r.stderr;
  const note = (line: string) => (text === "" || text.endsWith("\n") ? "" : "\n") + line;
  if (r.capped !== undefined) return { text: text + note(`[error] ${r.capped}`), isError: true };
  if (r.timedOut) return { text: text + note(`[error] command timed out after ${timeoutSeconds} seconds`), isError: true };
  if (r.exitCode !== 0) text += note(`[exit code: ${r.exitCode ?? "unknown"}]`);
  return { text, isError: false };
}

/**
 * The output all of the sidecar's running commands may hold together: 8 MiB. A command's
 * output is copied several times on its way out (chunks, text, the JSON answer, the socket), so the seed's 64 MiB
 * per command would pass the sidecar's 256 Mi pod limit on its own (docs/benchmarks-history.md, `sidecar-memory`).
 */
export const MAX_SHELL_OUTPUT_BYTES = 8 * 1024 * 1024;

/**
 * The output all commands running at once may buffer together. Each command is capped on its own (64 MiB), and
 * the commands of one sidecar share the same cap: concurrent calls cannot multiply what the sidecar holds.
 */
export class OutputBudget {
  readonly cap: number;
  #used = 0;

  /** A budget of `cap` bytes. */
  constructor(cap: number) {
    this.cap = cap;
  }

  /** Takes `bytes`; false (taking nothing) when that would pass the cap. */
  take(bytes: number): boolean {
    if (this.#used + bytes > this.cap) return false;
    this.#used += bytes;
    return true;
  }

  /** Gives back what a finished command took. */
  release(bytes: number): void {
    this.#used -= bytes;
  }
}
