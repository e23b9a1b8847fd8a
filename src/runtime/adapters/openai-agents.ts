// The `openai-agents` runtime: our small program on the OpenAI Agents SDK (images/openai-agents/agent.mjs, on PATH
// as `leviath-openai-agents` in its image) running one Agent whose only tools are the sidecar's, over /mcp.
// The program reads everything from the environment this adapter sets; docs/runtimes.md lists each setting.
import type { Launch, LaunchContext } from "./launch.ts";

/** The SDK version the program was checked against. */
export const OPENAI_AGENTS_VERSION = "0.20.0";
/** The program's name on the image's PATH. */
export const OPENAI_AGENTS_COMMAND = "leviath-openai-agents";
/** The variable that switches the program from the Responses API to Chat Completions (`chat_completions`). */
export const OPENAI_AGENTS_API_ENV = "LEVIATH_OPENAI_API";
/** The variable carrying the stage's instructions, added to the program's own (an environment value, never argv). */
export const OPENAI_AGENTS_INSTRUCTIONS_ENV = "LEVIATH_INSTRUCTIONS";
/** Seconds the SDK waits on a tool call beyond the adapter's tool timeout, so the sidecar's own answer arrives first. */
const TOOL_TIMEOUT_MARGIN_SECONDS = 30;

/** One run of the program on the Run's task; nothing is written (the token is in its environment, not argv). */
export function launchOpenAiAgents(ctx: LaunchContext): Launch {
  const key = ctx.env["OPENAI_API_KEY"];
  // A gateway that speaks only Chat Completions (vLLM, LiteLLM, ...) is named by the Run's credentials or env.
  const chat = ctx.env[OPENAI_AGENTS_API_ENV] === "chat_completions";
  return {
    command: OPENAI_AGENTS_COMMAND,
    args: ["--", ctx.task],
    env: {
      PATH: ctx.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: ctx.home,
      LEVIATH_SIDECAR_MCP_URL: `${ctx.sidecarUrl}/mcp`,
      LEVIATH_SIDECAR_TOKEN: ctx.token,
      LEVIATH_MCP_TIMEOUT_MS: String((ctx.toolTimeoutSeconds + TOOL_TIMEOUT_MARGIN_SECONDS) * 1000),
      OPENAI_AGENTS_DISABLE_TRACING: "1",
      ...(ctx.model === undefined ? {} : { LEVIATH_MODEL: ctx.model }),
      ...(ctx.instructions ? { [OPENAI_AGENTS_INSTRUCTIONS_ENV]: ctx.instructions } : {}),
      ...(ctx.providerBaseUrl === undefined ? {} : { OPENAI_BASE_URL: ctx.providerBaseUrl }),
      ...(key === undefined ? {} : { OPENAI_API_KEY: key }),
      ...(chat ? { [OPENAI_AGENTS_API_ENV]: "chat_completions" } : {}),
    },
    files: [],
  };
}

/** The program's final output: everything it printed on stdout (it prints nothing else there), less the newline it ends with. */
export function readOpenAiAgentsAnswer(stdout: string): { ok: true; answer: string } | { ok: false; message: string } {
  const answer = stdout.replace(/\n$/, "");
  return answer.trim() === "" ? { ok: false, message: `${OPENAI_AGENTS_COMMAND} printed no final output` } : { ok: true, answer };
}
