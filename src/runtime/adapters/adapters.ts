// Every runtime kind that `leviath adapter <kind>` starts: the client's program, its launch (pure) and how its
// final answer is read from what it printed. Adding a client is one entry here and one module beside this one.
import { buildClaudeCodeLaunch, readClaudeCodeAnswer } from "./claude-code.ts";
import { launchCodex, readCodexAnswer } from "./codex.ts";
import type { Launch, LaunchContext, RuntimeKind } from "./launch.ts";
import { launchOpenAiAgents, OPENAI_AGENTS_COMMAND, readOpenAiAgentsAnswer } from "./openai-agents.ts";

/** The final answer a client printed, or why it has none. */
export type ClientAnswer = { ok: true; answer: string } | { ok: false; message: string };

/** One runtime adapter. */
export interface RuntimeAdapter {
  /** The program the Agent's image must have on its PATH (named when it is missing). */
  readonly program: string;
  /** The package a team installs into its image (docs/runtimes.md), named when the program is missing. */
  readonly installs: string;
  /**
   * The model provider whose settings the client is given: the Run's model for it, its base URL
   * (`spec.runtime.providers.<provider>.baseUrl`, else `<PROVIDER>_BASE_URL`) and key (`<PROVIDER>_API_KEY`).
   */
  readonly provider: "anthropic" | "openai";
  /** Why this start cannot be made (a configuration error: the Run ends with exit 2), asked before buildLaunch; absent: it always can. */
  readonly checkLaunch?: (ctx: LaunchContext) => string | undefined;
  readonly buildLaunch: (ctx: LaunchContext) => Launch;
  /** The client's final answer in its standard output, or in the launch's answer file (its content, when it has one). */
  readonly readAnswer: (stdout: string, answerFile?: string) => ClientAnswer;
}

/** The adapters by kind; `leviath` (the reference runtime) has none: it is `leviath agent`. */
export const RUNTIME_ADAPTERS: Partial<Record<RuntimeKind, RuntimeAdapter>> = {
  "claude-code": { program: "claude", installs: "@anthropic-ai/claude-code", provider: "anthropic", buildLaunch: buildClaudeCodeLaunch, readAnswer: readClaudeCodeAnswer },
  codex: { program: "codex", installs: "@openai/codex", provider: "openai", buildLaunch: launchCodex, readAnswer: readCodexAnswer },
  "openai-agents": { program: OPENAI_AGENTS_COMMAND, installs: "@openai/agents and images/openai-agents/agent.mjs", provider: "openai", buildLaunch: launchOpenAiAgents, readAnswer: readOpenAiAgentsAnswer },
};
