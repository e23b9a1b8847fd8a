// The claude-code adapter: one `claude -p` (Claude Code's print mode, the npm package @anthropic-ai/claude-code)
// whose only tools are the sidecar's, over /mcp. Pure: a LaunchContext in, the launch out; `leviath adapter`
// writes the files and starts it. docs/runtimes.md says what each setting prevents.
import { buildMcpServersConfig, type Launch, type LaunchContext } from "./launch.ts";

/** The name the sidecar's MCP server has in Claude Code: its tools are `mcp__leviath__<tool>`. */
export const CLAUDE_MCP_SERVER = "leviath";

/** Where the adapter's files go under HOME (mode 0600, in a directory only the agent's user reads). */
export const CLAUDE_CODE_DIR = ".leviath/claude-code";

/** Variables passed on from the container's environment when set: the provider's credential and a proxy's settings. */
const PASSED_ON = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS", "LANG", "TZ"] as const;

/**
 * What Claude Code is told through its environment. Each row of docs/runtimes.md: telemetry, error reports,
 * auto-update and every other request but the model's off; no memory files; MCP waits longer than a prompt.
 */
function buildClaudeEnv(ctx: LaunchContext): Record<string, string> {
  const toolTimeoutMs = String(ctx.toolTimeoutSeconds * 1000);
  const env: Record<string, string> = {
    PATH: ctx.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: ctx.home,
    TMPDIR: ctx.home,
    CLAUDE_CONFIG_DIR: `${ctx.home}/${CLAUDE_CODE_DIR}/config`,
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_BUG_COMMAND: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    CLAUDE_CODE_DISABLE_AUTO_MEMORY: "1",
    CLAUDE_CODE_DISABLE_CLAUDE_MDS: "1",
    MCP_TIMEOUT: "60000",
    MCP_TOOL_TIMEOUT: toolTimeoutMs,
  };
  for (const name of PASSED_ON) {
    const value = ctx.env[name];
    if (value !== undefined && value !== "") env[name] = value;
  }
  if (ctx.providerBaseUrl !== undefined) env["ANTHROPIC_BASE_URL"] = ctx.providerBaseUrl;
  return env;
}

/** Claude Code's launch for a Run: `claude -p` reading the task on stdin, printing its final answer as JSON. */
export function buildClaudeCodeLaunch(ctx: LaunchContext): Launch {
  const mcpConfig = `${ctx.home}/${CLAUDE_CODE_DIR}/mcp.json`;
  const instructions = ctx.instructions ? `${ctx.home}/${CLAUDE_CODE_DIR}/instructions.md` : undefined;
  return {
    command: "claude",
    args: [
      "-p",
      "--output-format", "json",
      "--bare",
      "--setting-sources", "user",
      "--mcp-config", mcpConfig,
      "--strict-mcp-config",
      "--tools", "",
      "--permission-mode", "dontAsk",
      "--permission-prompts", "none",
      "--allowedTools", `mcp__${CLAUDE_MCP_SERVER}`,
      "--no-session-persistence",
      ...(ctx.model !== undefined ? ["--model", ctx.model] : []),
      ...(instructions !== undefined ? ["--append-system-prompt-file", instructions] : []),
    ],
    env: buildClaudeEnv(ctx),
    files: [{ path: mcpConfig, content: buildMcpServersConfig(ctx, CLAUDE_MCP_SERVER) }, ...(instructions !== undefined ? [{ path: instructions, content: ctx.instructions! }] : [])],
    stdin: ctx.task,
  };
}

/**
 * The final answer in what `claude -p --output-format json` printed: its `result` when the run succeeded, or why
 * not (`is_error`, a subtype other than success, or no JSON result at all).
 */
export function readClaudeCodeAnswer(stdout: string): { ok: true; answer: string } | { ok: false; message: string } {
  const line = stdout.trim().split("\n").reverse().find((l) => l.startsWith("{"));
  let parsed: unknown;
  try {
    parsed = line === undefined ? undefined : JSON.parse(line);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== "object" || parsed === null || (parsed as { type?: unknown }).type !== "result") {
    return { ok: false, message: "claude printed no JSON result" };
  }
  const r = parsed as { subtype?: unknown; is_error?: unknown; result?: unknown };
  if (r.is_error === true || r.subtype !== "success" || typeof r.result !== "string") {
    return { ok: false, message: `claude ended with ${String(r.subtype)}${typeof r.result === "string" ? `: ${r.result.slice(0, 500)}` : ""}` };
  }
  return { ok: true, answer: r.result };
}
