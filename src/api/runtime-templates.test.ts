import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema } from "./leviath-policy.ts";
import { checkPlaceholders, RuntimeTemplateSchema } from "./runtime-templates.ts";

const template = (over: Record<string, unknown> = {}) => ({ name: "claude-print", provider: "anthropic", command: ["claude", "-p", "{task}", "--mcp-config", "{mcp_config}"], ...over });

/** The first issue of a policy with these templates, as `path: message`. */
function refusal(templates: unknown[]): string {
  const r = LeviathPolicySpecSchema.safeParse({ runtimeTemplates: templates });
  if (r.success) return "accepted";
  const issue = r.error.issues[0]!;
  return `${issue.path.join(".")}: ${issue.message}`;
}

describe("LeviathPolicy spec.runtimeTemplates", () => {
  it("is empty by default, and takes a template with known placeholders, its env and stdin defaulted", () => {
    expect(LeviathPolicySpecSchema.parse({}).runtimeTemplates).toEqual([]);
    expect(RuntimeTemplateSchema.parse(template({ env: { MCP_TOOL_TIMEOUT: "{tool_timeout_ms}" } }))).toEqual({ ...template(), env: { MCP_TOOL_TIMEOUT: "{tool_timeout_ms}" }, stdin: "none" });
    // Braces that are not a placeholder (JSON, `{}`) are literal text.
    expect(refusal([template({ command: ["client", "--settings", '{"a":1}', "{}", "{Task}"] })])).toBe("accepted");
  });

  it.each([
    [["client", "{prompt}"], "runtimeTemplates.0.command.1: {prompt} is not a placeholder (known: {task}, {system_prompt}, {mcp_url}, {mcp_config}, {model}, {home}, {tool_timeout_seconds}, {tool_timeout_ms})"],
    [["client", "--header", "Authorization: Bearer {token}"], "runtimeTemplates.0.command.2: {token}: the runtime token is never placed in a template's command or environment; the client reads it from the {mcp_config} file"],
    [["client", "--auth={runtime_auth}"], "runtimeTemplates.0.command.1: {runtime_auth}: the runtime token is never placed in a template's command or environment; the client reads it from the {mcp_config} file"],
    [["sh", "-c", "client --token $(cat /run/leviath-runtime/runtime-token)"], "runtimeTemplates.0.command.2: '/run/leviath-runtime': the runtime token is never placed in a template's command or environment; the client reads it from the {mcp_config} file"],
    [["sh", "-c", 'client --token "$(cat $LEVIATH_SIDECAR_TOKEN_FILE)"'], "runtimeTemplates.0.command.2: 'LEVIATH_SIDECAR_TOKEN': the runtime token is never placed in a template's command or environment; the client reads it from the {mcp_config} file"],
    [["{model}"], "runtimeTemplates.0.command.0: the program (the first element) is a literal name or path, without placeholders"],
    [[""], "runtimeTemplates.0.command.0: the program (the first element) is a literal name or path, without placeholders"],
    [[], "runtimeTemplates.0.command: Too small: expected array to have >=1 items"],
  ])("refuses the command %j, naming the field", (command, message) => {
    expect(refusal([template({ command })])).toBe(message);
  });

  it("refuses the token, an unknown placeholder or a bad name in env, an unknown key, a missing provider, two templates of one name", () => {
    expect(refusal([template({ env: { AUTH: "Bearer {bearer}" } })])).toBe("runtimeTemplates.0.env.AUTH: {bearer}: the runtime token is never placed in a template's command or environment; the client reads it from the {mcp_config} file");
    expect(refusal([template({ env: { X: "{nope}" } })])).toMatch(/^runtimeTemplates\.0\.env\.X: \{nope\} is not a placeholder/);
    expect(refusal([template({ env: { "BAD-NAME": "1" } })])).toBe("runtimeTemplates.0.env.BAD-NAME: an environment variable name is letters, digits and '_'");
    expect(refusal([template({ args: ["x"] })])).toBe('runtimeTemplates.0: Unrecognized key: "args"');
    expect(refusal([{ name: "x", command: ["client"] }])).toMatch(/^runtimeTemplates\.0\.provider: /);
    expect(refusal([template({ name: "Claude" })])).toBe("runtimeTemplates.0.name: a template name is lowercase letters, digits and '-' (a DNS label)");
    expect(refusal([template(), template()])).toBe("runtimeTemplates: two runtime templates have the same name");
  });

  it("checkPlaceholders passes a string whose placeholders are all known", () => {
    expect(checkPlaceholders("{mcp_url} {model} {home}/x")).toBeUndefined();
  });
});
