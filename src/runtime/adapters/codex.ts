// The `codex` runtime: OpenAI's Codex CLI (`codex exec`, npm @openai/codex, settings as of 0.171.0) with the
// sidecar's /mcp as its only MCP server and the Run's model provider as a custom provider. Every setting below is
// there to take a decision away from the client: its own tools off (the sidecar's are the only ones offered), its
// own approval prompts and sandbox out of the way (the sidecar's policy decides), nothing read from the workspace
// behind the sidecar's back, nothing sent home. docs/runtimes.md lists each with what it prevents.
import type { Launch, LaunchContext } from "./launch.ts";

/** The client version these settings were checked against (`--strict-config` refuses a key another version lacks). */
export const CODEX_VERSION = "0.171.0";
/** The MCP server's name in Codex: its tools reach the model as the namespace `mcp__leviath`. */
export const CODEX_MCP_SERVER = "leviath";
/** The variable the runtime token travels in (`bearer_token_env_var`): never a file the model could read, never argv. */
export const CODEX_TOKEN_ENV = "LEVIATH_SIDECAR_TOKEN";
/** The variable holding the provider's key (`env_key`): the Run's credential, as the reference runtime reads it. */
export const CODEX_KEY_ENV = "OPENAI_API_KEY";
/** The model asked for when the Run names none (Codex's own default would come with its bundled tool settings). */
export const CODEX_DEFAULT_MODEL = "gpt-5.5";
/** Seconds Codex waits on a tool call beyond the adapter's tool timeout, so the sidecar's own answer arrives first. */
const TOOL_TIMEOUT_MARGIN_SECONDS = 30;

// Codex features that would add a tool of the client's own, or act outside the sidecar; each `false`.
const FEATURES_OFF = ["shell_tool", "tool_search", "unified_exec", "view_image", "goals", "apps", "plugins", "remote_plugin", "memories", "skill_search", "hooks", "image_generation", "browser_use", "computer_use", "in_app_browser", "tool_suggest", "workspace_dependencies"] as const;

/** The system prompt Codex sends in place of its own (which speaks of a shell and patches the model does not have). */
const BASE_INSTRUCTIONS = "You act only through the tools you are given; each call is checked by a policy, and a refused call's result says why. When the task is done, hand the final answer over with the submit_output tool if it is offered, then answer with it.";

/**
 * The model catalog Codex reads instead of its bundled one: one entry, the Run's model, with none of the tools a
 * bundled entry adds of its own accord (apply_patch, a shell, tool search that hides the MCP tools behind it, the
 * code mode that runs the model's JavaScript in a local host process).
 */
export function buildCodexModelCatalog(model: string): string {
  return `${JSON.stringify({
    models: [{
      slug: model, display_name: model, description: "The Run's model, through the sidecar's tools only.", visibility: "list", supported_in_api: true, priority: 1,
      base_instructions: BASE_INSTRUCTIONS, shell_type: "disabled", apply_patch_tool_type: null, tool_mode: null, supports_search_tool: false,
      experimental_supported_tools: [], input_modalities: ["text"], context_window: 128_000, truncation_policy: { mode: "tokens", limit: 10_000 },
      supports_parallel_tool_calls: true, supported_reasoning_levels: [], support_verbosity: false,
    }],
  }, null, 2)}\n`;
}

/** A TOML basic string (JSON's escapes are TOML's). */
const str = (s: string): string => JSON.stringify(s);

/** Codex's config.toml for this Run. */
export function buildCodexConfig(ctx: LaunchContext): string {
  const lines = [
    `model = ${str(ctx.model ?? CODEX_DEFAULT_MODEL)}`,
    `model_catalog_json = ${str(`${ctx.home}/.codex/leviath-models.json`)}`,
    'model_provider = "leviath"',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    'web_search = "disabled"',
    "project_doc_max_bytes = 0",
    "check_for_update_on_startup = false",
    // The stage's instructions, after the catalog's base instructions (a developer message Codex sends each turn).
    ...(ctx.instructions ? [`developer_instructions = ${str(ctx.instructions)}`] : []),
    "",
    "[model_providers.leviath]",
    'name = "leviath"',
    `base_url = ${str(ctx.providerBaseUrl ?? "https://api.openai.com/v1")}`,
    `env_key = ${str(CODEX_KEY_ENV)}`,
    'wire_api = "responses"',
    "",
    `[mcp_servers.${CODEX_MCP_SERVER}]`,
    `url = ${str(`${ctx.sidecarUrl}/mcp`)}`,
    `bearer_token_env_var = ${str(CODEX_TOKEN_ENV)}`,
    "required = true",
    "startup_timeout_sec = 60",
    `tool_timeout_sec = ${ctx.toolTimeoutSeconds + TOOL_TIMEOUT_MARGIN_SECONDS}`,
    'default_tools_approval_mode = "approve"',
    "",
    "[features]",
    ...FEATURES_OFF.map((f) => `${f} = false`),
    "",
    "[agents]",
    "enabled = false",
    "",
    "[tools]",
    "experimental_request_user_input = { enabled = false }",
    "",
    "[analytics]",
    "enabled = false",
    "",
    "[feedback]",
    "enabled = false",
    "",
    "[otel]",
    'exporter = "none"',
    'metrics_exporter = "none"',
    'trace_exporter = "none"',
    "log_user_prompt = false",
    "",
    "[history]",
    'persistence = "none"',
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * One `codex exec` of the Run's task, configured by a config.toml under `<home>/.codex`. Its final message goes to
 * a file (--output-last-message), written empty first so that only this run's message can be read there: stdout
 * carries it too, but beside whatever else a version chooses to print there.
 */
export function launchCodex(ctx: LaunchContext): Launch {
  const codexHome = `${ctx.home}/.codex`;
  const answerFile = `${codexHome}/last-message.md`;
  const key = ctx.env[CODEX_KEY_ENV];
  return {
    command: "codex",
    args: ["exec", "--strict-config", "--ephemeral", "--skip-git-repo-check", "--sandbox", "read-only", "--color", "never", "--cd", ctx.workdir, "--output-last-message", answerFile, "--", ctx.task],
    env: {
      PATH: ctx.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: ctx.home,
      CODEX_HOME: codexHome,
      NO_COLOR: "1",
      [CODEX_TOKEN_ENV]: ctx.token,
      ...(key === undefined ? {} : { [CODEX_KEY_ENV]: key }),
    },
    files: [
      { path: `${codexHome}/config.toml`, content: buildCodexConfig(ctx) },
      { path: `${codexHome}/leviath-models.json`, content: buildCodexModelCatalog(ctx.model ?? CODEX_DEFAULT_MODEL) },
      { path: answerFile, content: "" },
    ],
    answerFile,
  };
}

/** Codex's final message, from the file it wrote (--output-last-message); none, or an empty one: no answer. */
export function readCodexAnswer(_stdout: string, answerFile?: string): { ok: true; answer: string } | { ok: false; message: string } {
  const answer = answerFile?.trim() ?? "";
  return answer === "" ? { ok: false, message: "codex wrote no final message" } : { ok: true, answer };
}
