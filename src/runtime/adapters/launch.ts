// The shape every runtime adapter shares (issue 30): an adapter turns what the agent container is given (the
// sidecar's address and token file, the Run's task, the model provider) into one launch of a third-party MCP
// client (Claude Code, Codex, a program on the OpenAI Agents SDK, or an admin's template), configured so that every
// action goes through the sidecar's /mcp. Pure: the adapter's caller writes the files and starts the program.

// The kinds live in api/ (the Agent's schema and the policy's ceiling name them; api/ imports nothing from here).
export { RUNTIME_KINDS, type RuntimeKind } from "../../api/runtime-kinds.ts";

/** What an adapter is given at the start of a Run's agent container. */
export interface LaunchContext {
  /** The sidecar's base URL (`LEVIATH_SIDECAR_URL`); its MCP endpoint is `${sidecarUrl}/mcp`. */
  readonly sidecarUrl: string;
  /** The runtime token, read from `LEVIATH_SIDECAR_TOKEN_FILE`: it goes into a file or the client's environment, never onto a command line. */
  readonly token: string;
  /** A writable scratch directory (the container's HOME, `/tmp`), where configuration files are written. */
  readonly home: string;
  /** The workspace: the client's working directory. */
  readonly workdir: string;
  /** The Run's task, as the model is to read it. */
  readonly task: string;
  /** The entry stage's system prompt (the blueprint's `system_prompt`), when it has one: added to the client's own. */
  readonly instructions?: string;
  /** The model to ask for, when the Run or the stage names one. */
  readonly model?: string;
  /** The model provider's base URL, when the Run names one (otherwise the client's own default). */
  readonly providerBaseUrl?: string;
  /** Seconds a client waits on one tool call: longer than the policy's interaction timeout, so a prompt can be answered. */
  readonly toolTimeoutSeconds: number;
  /** The container's environment (the Run's credentials arrive here as variables). */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** A file the launch needs written before the program starts (mode 0600 unless said). */
export interface LaunchFile {
  readonly path: string;
  readonly content: string;
  readonly mode?: number;
}

/** One program to start: its command, arguments, environment (complete: nothing else is inherited) and files. */
export interface Launch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly files: readonly LaunchFile[];
  /** What the program reads on its standard input (the task, when a command line could not hold it); none: nothing. */
  readonly stdin?: string;
  /** A file the program writes its final answer to (Codex's --output-last-message): read after it ends. */
  readonly answerFile?: string;
}

/**
 * The sidecar's /mcp as the common `mcpServers` JSON configuration (Claude Code's --mcp-config, and what many MCP
 * clients read): one streamable HTTP server named `name`, the runtime token in its Authorization header. Written
 * to a file of mode 0600: the token is never on a command line.
 */
export function buildMcpServersConfig(ctx: Pick<LaunchContext, "sidecarUrl" | "token">, name: string): string {
  const server = { type: "http", url: `${ctx.sidecarUrl}/mcp`, headers: { Authorization: `Bearer ${ctx.token}` } };
  return `${JSON.stringify({ mcpServers: { [name]: server } }, null, 2)}\n`;
}
