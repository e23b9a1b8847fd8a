// The mcp-command adapter: any MCP-capable CLI, started as the admin's template (LeviathPolicy
// spec.runtimeTemplates) says, its placeholders filled from what the pod gives. The adapter writes the sidecar's
// /mcp with the runtime token into a file (the template's {mcp_config}) and gives the client the provider's key and
// base URL; what turns the client's own tools off is the template's business (docs/runtimes.md). Pure: a template
// and a LaunchContext in, the launch out.
import { PLACEHOLDER, type RuntimeTemplate, type TemplatePlaceholder } from "../../api/runtime-templates.ts";
import type { ClientAnswer, RuntimeAdapter } from "./adapters.ts";
import { buildMcpServersConfig, type Launch, type LaunchContext, type RuntimeKind } from "./launch.ts";

/** The runtime kind whose adapter is built from the admin's template. */
export const MCP_COMMAND_KIND = "mcp-command" satisfies RuntimeKind;

/** The name the sidecar's MCP server has in the {mcp_config} file. */
export const MCP_COMMAND_SERVER = "leviath";
/** Where the adapter's files go under HOME. */
export const MCP_COMMAND_DIR = ".leviath/mcp-command";

/** Variables passed on from the container's environment when set: a proxy's settings, the locale. */
const PASSED_ON = ["HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS", "LANG", "TZ"] as const;

/** A launch, or why this start cannot be made (a configuration error: the template names {model} and the Run names none, or the token would reach argv). */
export type TemplateLaunch = { ok: true; launch: Launch } | { ok: false; message: string };
/** A filled string, or the first placeholder without a value. */
type Filled = { ok: true; value: string } | { ok: false; message: string };

/** The placeholders' values for one start. */
function buildValues(ctx: LaunchContext, mcpConfig: string): Record<TemplatePlaceholder, string | undefined> {
  return {
    task: ctx.task,
    system_prompt: ctx.instructions ?? "",
    mcp_url: `${ctx.sidecarUrl}/mcp`,
    mcp_config: mcpConfig,
    model: ctx.model,
    home: ctx.home,
    tool_timeout_seconds: String(ctx.toolTimeoutSeconds),
    tool_timeout_ms: String(ctx.toolTimeoutSeconds * 1000),
  };
}

/** `text` with its placeholders filled, or which one has no value (an unknown one too: the policy's schema refuses those). */
export function fillPlaceholders(text: string, values: Readonly<Record<string, string | undefined>>, where: string): Filled {
  let missing: string | undefined;
  const value = text.replace(PLACEHOLDER, (whole, name: string) => {
    const filled = Object.hasOwn(values, name) ? values[name] : undefined;
    if (filled === undefined) missing ??= `${where}: ${whole} has no value for this Run${name === "model" ? " (the Run and the stage name no model for the template's provider)" : ""}`;
    return filled ?? "";
  });
  return missing === undefined ? { ok: true, value } : { ok: false, message: missing };
}

/** Every `[where, text]` filled, in order, or the first that cannot be. */
function fillAll(entries: readonly (readonly [string, string])[], values: Readonly<Record<string, string | undefined>>): { ok: true; values: string[] } | { ok: false; message: string } {
  const out: string[] = [];
  for (const [where, text] of entries) {
    const filled = fillPlaceholders(text, values, where);
    if (!filled.ok) return filled;
    out.push(filled.value);
  }
  return { ok: true, values: out };
}

/** The environment the client always gets: the basics, the passed-on variables, the provider's key and base URL. */
function buildBaseEnv(template: RuntimeTemplate, ctx: LaunchContext): Record<string, string> {
  const prefix = template.provider.toUpperCase();
  const env: Record<string, string> = { PATH: ctx.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin", HOME: ctx.home, TMPDIR: ctx.home };
  for (const name of [...PASSED_ON, `${prefix}_API_KEY`]) {
    const value = ctx.env[name];
    if (value !== undefined && value !== "") env[name] = value;
  }
  if (ctx.providerBaseUrl !== undefined) env[`${prefix}_BASE_URL`] = ctx.providerBaseUrl;
  return env;
}

/**
 * The launch of `template` for this start: its argv and env filled, the base environment, the {mcp_config} file.
 * Refused when a placeholder has no value, or when the runtime token would end up in its argv or environment.
 */
export function buildTemplateLaunch(template: RuntimeTemplate, ctx: LaunchContext): TemplateLaunch {
  const mcpConfig = `${ctx.home}/${MCP_COMMAND_DIR}/mcp.json`;
  const values = buildValues(ctx, mcpConfig);
  const at = `spec.runtimeTemplates[${template.name}]`;
  const names = Object.keys(template.env);
  const filled = fillAll([...template.command.map((text, i) => [`${at}.command[${i}]`, text] as const), ...names.map((n) => [`${at}.env.${n}`, template.env[n]!] as const)], values);
  if (!filled.ok) return filled;
  const [command, ...args] = filled.values.slice(0, template.command.length);
  const env = { ...buildBaseEnv(template, ctx), ...Object.fromEntries(names.map((n, i) => [n, filled.values[template.command.length + i]!])) };
  if ([...args, ...Object.values(env)].some((v) => v.includes(ctx.token))) {
    return { ok: false, message: `runtime template '${template.name}' would put the runtime token on the command line or in the environment: refused` };
  }
  const files = [{ path: mcpConfig, content: buildMcpServersConfig(ctx, MCP_COMMAND_SERVER) }];
  return { ok: true, launch: { command: command!, args, env, files, ...(template.stdin === "task" ? { stdin: ctx.task } : {}) } };
}

/** The final answer: what the client printed on its standard output, trimmed; nothing printed is no answer. */
export function readStdoutAnswer(program: string, stdout: string): ClientAnswer {
  const answer = stdout.trim();
  return answer === "" ? { ok: false, message: `${program} printed no answer on its standard output` } : { ok: true, answer };
}

/** The adapter for the policy's template the Agent names (pinned in runtime.json at the Run's start). */
export function buildTemplateAdapter(template: RuntimeTemplate): RuntimeAdapter {
  const program = template.command[0]!;
  return {
    program,
    installs: `the program of runtime template '${template.name}'`,
    provider: template.provider,
    checkLaunch: (ctx) => {
      const built = buildTemplateLaunch(template, ctx);
      return built.ok ? undefined : built.message;
    },
    buildLaunch: (ctx) => {
      const built = buildTemplateLaunch(template, ctx);
      // leviath adapter asks checkLaunch first: a refusal here is a bug.
      if (!built.ok) throw new Error(`buildLaunch after a refused checkLaunch: ${built.message}`);
      return built.launch;
    },
    readAnswer: (stdout) => readStdoutAnswer(program, stdout),
  };
}
