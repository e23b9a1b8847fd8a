// The mcp-command adapter: any MCP-capable CLI, started as the admin's template (LeviathPolicy
// spec.runtimeTemplates) says, its placeholders filled from what the pod gives. The adapter writes the sidecar's
// /mcp with the runtime token into a file (the template's {mcp_config}) and gives the client the provider's key and
// base URL; what turns the client's own tools off is the template's business (docs/runtimes.md). Pure: a template
// and a LaunchContext in, the launch out.
import { PLACEHOLDER, type RuntimeTemplate, type TemplatePlaceholder } from "../api/runtime-templates.ts";
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

/** A template that cannot be filled for this start (it names {model} and the Run names none, or the token would reach argv). */
export class TemplateFillError extends Error {}

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

/** `text` with its placeholders filled; an unknown one (the policy's schema refuses those) or one without a value throws. */
export function fillPlaceholders(text: string, values: Readonly<Record<string, string | undefined>>, where: string): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => {
    const value = Object.hasOwn(values, name) ? values[name] : undefined;
    if (value === undefined) throw new TemplateFillError(`${where}: ${whole} has no value for this Run${name === "model" ? " (the Run and the stage name no model for the template's provider)" : ""}`);
    return value;
  });
}

/** The environment: the basics, the provider's key and base URL, then the template's own variables. */
function buildEnv(template: RuntimeTemplate, ctx: LaunchContext, values: Record<string, string | undefined>): Record<string, string> {
  const prefix = template.provider.toUpperCase();
  const env: Record<string, string> = { PATH: ctx.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin", HOME: ctx.home, TMPDIR: ctx.home };
  for (const name of [...PASSED_ON, `${prefix}_API_KEY`]) {
    const value = ctx.env[name];
    if (value !== undefined && value !== "") env[name] = value;
  }
  if (ctx.providerBaseUrl !== undefined) env[`${prefix}_BASE_URL`] = ctx.providerBaseUrl;
  for (const [name, text] of Object.entries(template.env)) env[name] = fillPlaceholders(text, values, `spec.runtimeTemplates[${template.name}].env.${name}`);
  return env;
}

/** The launch of `template` for this start; fails closed when the runtime token would end up in its argv or environment. */
export function buildTemplateLaunch(template: RuntimeTemplate, ctx: LaunchContext): Launch {
  const mcpConfig = `${ctx.home}/${MCP_COMMAND_DIR}/mcp.json`;
  const values = buildValues(ctx, mcpConfig);
  const [command, ...args] = template.command.map((text, i) => fillPlaceholders(text, values, `spec.runtimeTemplates[${template.name}].command[${i}]`));
  const env = buildEnv(template, ctx, values);
  const leak = [...args, ...Object.values(env)].some((v) => v.includes(ctx.token));
  if (leak) throw new TemplateFillError(`runtime template '${template.name}' would put the runtime token on the command line or in the environment: refused`);
  return {
    command: command!,
    args,
    env,
    files: [{ path: mcpConfig, content: buildMcpServersConfig(ctx, MCP_COMMAND_SERVER) }],
    ...(template.stdin === "task" ? { stdin: ctx.task } : {}),
  };
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
    buildLaunch: (ctx) => buildTemplateLaunch(template, ctx),
    readAnswer: (stdout) => readStdoutAnswer(program, stdout),
  };
}
