// The admin's command templates for the generic runtime kind `mcp-command` (LeviathPolicy spec.runtimeTemplates):
// any MCP-capable CLI, started by `leviath adapter mcp-command` with the argv and environment the admin wrote, the
// placeholders filled at start (src/runtime/adapters/mcp-command.ts). Checked when the policy is loaded: an unknown
// placeholder, or one that would put the runtime token on a command line, is refused with the field that holds it.
import { z } from "zod";

/**
 * The placeholders a template may use, and what each becomes. The runtime token is none of them: it reaches the
 * client only inside the `{mcp_config}` file (mode 0600), never in argv or the environment.
 */
export const TEMPLATE_PLACEHOLDERS = {
  task: "the Run's task as the model reads it (labelled, with its inputs; in a later stage with the last stage's answer)",
  system_prompt: "the stage's instructions (its system_prompt and, in a multi-stage Agent, what the stage expects); empty when none",
  mcp_url: "the sidecar's MCP endpoint, http://127.0.0.1:<port>/mcp",
  mcp_config: "the path of a file (mode 0600) holding the sidecar's /mcp in the common mcpServers JSON shape, with the runtime token in its Authorization header",
  model: "the model the Run or the stage names for the template's provider (the start fails when it names none)",
  home: "the container's HOME, the only writable directory besides the workspace",
  tool_timeout_seconds: "seconds the client should wait on one tool call: the policy's interaction timeout plus 60",
  tool_timeout_ms: "the same in milliseconds",
} as const;
/** One placeholder's name. */
export type TemplatePlaceholder = keyof typeof TEMPLATE_PLACEHOLDERS;

/** `{name}`: a placeholder. Anything else in braces (JSON, `{}`) is literal text. */
export const PLACEHOLDER = /\{([a-z_][a-z0-9_]*)\}/g;

/** Placeholder names that would carry the runtime token; refused with their own message. */
const TOKEN_LIKE = /token|secret|auth|bearer/;
/** What names the runtime token's file or variable (src/sandbox/pods.ts, src/cli/agent.ts): a template reading it would put the token where the template says. */
const TOKEN_SOURCES = ["LEVIATH_SIDECAR_TOKEN", "/run/leviath-runtime"];
const NOT_THE_TOKEN = "the runtime token is never placed in a template's command or environment; the client reads it from the {mcp_config} file";

/** Why a string of a template cannot be used, or undefined: every placeholder in it is known and none is the token. */
export function checkPlaceholders(text: string): string | undefined {
  const source = TOKEN_SOURCES.find((s) => text.includes(s));
  if (source !== undefined) return `'${source}': ${NOT_THE_TOKEN}`;
  for (const m of text.matchAll(PLACEHOLDER)) {
    const name = m[1]!;
    if (Object.hasOwn(TEMPLATE_PLACEHOLDERS, name)) continue;
    if (TOKEN_LIKE.test(name)) return `{${name}}: ${NOT_THE_TOKEN}`;
    return `{${name}} is not a placeholder (known: ${Object.keys(TEMPLATE_PLACEHOLDERS).map((p) => `{${p}}`).join(", ")})`;
  }
  return undefined;
}

const placeholderText = z.string().superRefine((text, ctx) => {
  const why = checkPlaceholders(text);
  if (why !== undefined) ctx.addIssue({ code: "custom", message: why });
});

/** An environment variable's name: letters, digits, underscores, not starting with a digit. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One command template an Agent of kind mcp-command may name. */
export const RuntimeTemplateSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "a template name is lowercase letters, digits and '-' (a DNS label)").max(63)
    .describe("What an Agent names in spec.runtime.template."),
  command: z.array(placeholderText).min(1).max(256)
    .refine((argv) => argv[0] === undefined || (argv[0].trim() !== "" && argv[0].match(PLACEHOLDER) === null), { message: "the program (the first element) is a literal name or path, without placeholders", path: [0] })
    .describe("The program and its arguments, run without a shell; each element may hold placeholders ({task}, {system_prompt}, {mcp_url}, {mcp_config}, {model}, {home}, {tool_timeout_seconds}, {tool_timeout_ms}). The runtime token is never one of them: it is only in the {mcp_config} file."),
  env: z.record(z.string(), placeholderText)
    .superRefine((env, ctx) => {
      for (const name of Object.keys(env)) if (!ENV_NAME.test(name)) ctx.addIssue({ code: "custom", message: "an environment variable name is letters, digits and '_'", path: [name] });
    })
    .default({})
    .describe("Environment variables the client is started with, besides PATH, HOME, TMPDIR, LANG, TZ, the proxy settings and the provider's key and base URL; values may hold placeholders."),
  provider: z.enum(["anthropic", "openai"])
    .describe("The model provider whose settings the client is given: the Run's model for it ({model}), <PROVIDER>_BASE_URL (spec.runtime.providers.<provider>.baseUrl, else the credential's) and <PROVIDER>_API_KEY."),
  stdin: z.enum(["none", "task"]).default("none")
    .describe("What the client reads on its standard input: nothing, or the task (for a task longer than a command line holds)."),
}).describe("A command template for runtime kind mcp-command: any MCP-capable CLI, configured by the admin so that its only tools are the sidecar's (docs/runtimes.md).");
/** One command template, as parsed. */
export type RuntimeTemplate = z.infer<typeof RuntimeTemplateSchema>;

/** The policy's templates: names unique. */
export const RuntimeTemplatesSchema = z.array(RuntimeTemplateSchema).max(64)
  .refine((ts) => new Set(ts.map((t) => t.name)).size === ts.length, { message: "two runtime templates have the same name" })
  .default([])
  .describe("Command templates for runtime kind mcp-command (docs/runtimes.md): an Agent names one in spec.runtime.template; the kind must also be in spec.ceilings.runtimeKinds.");
