// Every runtime kind that `leviath adapter <kind>` starts: the client's program, its launch (pure) and how its
// final answer is read from what it printed. Adding a client is one entry here and one module beside this one.
import { buildClaudeCodeLaunch, readClaudeCodeAnswer } from "./claude-code.ts";
import type { Launch, LaunchContext, RuntimeKind } from "./launch.ts";

/** The final answer a client printed, or why it has none. */
export type ClientAnswer = { ok: true; answer: string } | { ok: false; message: string };

/** One runtime adapter. */
export interface RuntimeAdapter {
  /** The program the Agent's image must have on its PATH (named when it is missing). */
  readonly program: string;
  /** The package a team installs into its image (docs/runtimes.md), named when the program is missing. */
  readonly installs: string;
  readonly buildLaunch: (ctx: LaunchContext) => Launch;
  /** The client's final answer in its standard output. */
  readonly readAnswer: (stdout: string) => ClientAnswer;
}

/** The adapters by kind; `leviath` (the reference runtime) has none: it is `leviath agent`. */
export const RUNTIME_ADAPTERS: Partial<Record<RuntimeKind, RuntimeAdapter>> = {
  "claude-code": { program: "claude", installs: "@anthropic-ai/claude-code", buildLaunch: buildClaudeCodeLaunch, readAnswer: readClaudeCodeAnswer },
};
