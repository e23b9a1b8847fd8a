// The run's transcript on the runtime's log: one readable line per step (stage, model turn, tool call, decision).
// At info it never holds file contents or what the model wrote: arguments that carry content are shown as their
// size, results as size and label. At debug the texts follow, indented.

/** Levels of the transcript. */
export type TranscriptLevel = "info" | "debug";

/** Arguments whose value is content (a file, an answer, a message body), shown as a size at info. */
const CONTENT_ARGS = new Set(["content", "old_str", "new_str", "output", "body", "text", "message"]);
/** Any other string argument longer than this is shown as a size too. */
const MAX_SHOWN_ARG = 200;

/** The arguments of a call, with content replaced by its size. */
export function describeArgs(args: Record<string, unknown>): string {
  const shown = Object.fromEntries(Object.entries(args).map(([k, v]) => {
    const text = typeof v === "string" ? v : JSON.stringify(v) ?? "";
    return [k, CONTENT_ARGS.has(k) || text.length > MAX_SHOWN_ARG ? `<${Buffer.byteLength(text)} bytes>` : v];
  }));
  return JSON.stringify(shown);
}

/** Writes transcript lines. */
export interface Transcript {
  line(text: string): void;
  /** Lines only written at debug (contents). */
  detail(label: string, text: string): void;
  warn(text: string): void;
}

/** A transcript writing to `write` (stdout in the CLI). */
export function createTranscript(write: (text: string) => void, level: TranscriptLevel, clock: () => Date = () => new Date()): Transcript {
  const stamp = () => clock().toISOString();
  return {
    line: (text) => write(`${stamp()} ${text}\n`),
    warn: (text) => write(`${stamp()} warning: ${text}\n`),
    detail: (label, text) => {
      if (level === "debug") write(`${stamp()}   ${label}: ${text.replace(/\n/g, "\n    ")}\n`);
    },
  };
}
