import { describe, expect, it } from "vitest";
import { RuntimeTemplateSchema, type RuntimeTemplate } from "../../api/runtime-templates.ts";
import type { LaunchContext } from "./launch.ts";
import { buildTemplateAdapter, buildTemplateLaunch, fillPlaceholders } from "./mcp-command.ts";

const TOKEN = "runtime-token-0123456789abcdef";
const BASE: LaunchContext = {
  sidecarUrl: "http://127.0.0.1:7777", token: TOKEN, home: "/tmp", workdir: "/workspace", task: "Task: digest the notes", instructions: "Keep it short.",
  model: "claude-haiku-4-5", providerBaseUrl: "https://llm-gateway.internal", toolTimeoutSeconds: 3660,
  env: { PATH: "/app/bin:/usr/bin", ANTHROPIC_API_KEY: "sk-ant-1", OPENAI_API_KEY: "sk-openai", KUBERNETES_SERVICE_HOST: "10.0.0.1", AWS_SECRET_ACCESS_KEY: "nope", HTTPS_PROXY: "http://proxy:3128" },
};
const ctx = (over: Partial<LaunchContext> = {}): LaunchContext => ({ ...BASE, ...over });
/** The launch, for a template that can be filled. */
const launchOf = (t: RuntimeTemplate, c: LaunchContext) => {
  const built = buildTemplateLaunch(t, c);
  if (!built.ok) throw new Error(built.message);
  return built.launch;
};
const template = (over: Partial<RuntimeTemplate> = {}): RuntimeTemplate => RuntimeTemplateSchema.parse({
  name: "claude-print", provider: "anthropic",
  command: ["claude", "-p", "{task}", "--mcp-config", "{mcp_config}", "--model", "{model}", "--append-system-prompt", "{system_prompt}", "--url={mcp_url}"],
  env: { MCP_TOOL_TIMEOUT: "{tool_timeout_ms}", CLAUDE_CONFIG_DIR: "{home}/.claude", TIMEOUT_S: "{tool_timeout_seconds}" },
  ...over,
});

describe("buildTemplateLaunch", () => {
  it("fills every placeholder and writes the sidecar's /mcp with the token into the 0600 file {mcp_config} names", () => {
    const launch = launchOf(template(), ctx());
    expect(launch.command).toBe("claude");
    expect(launch.args).toEqual(["-p", "Task: digest the notes", "--mcp-config", "/tmp/.leviath/mcp-command/mcp.json", "--model", "claude-haiku-4-5", "--append-system-prompt", "Keep it short.", "--url=http://127.0.0.1:7777/mcp"]);
    expect(launch.files).toEqual([{ path: "/tmp/.leviath/mcp-command/mcp.json", content: expect.any(String) }]);
    expect(JSON.parse(launch.files[0]!.content)).toEqual({ mcpServers: { leviath: { type: "http", url: "http://127.0.0.1:7777/mcp", headers: { Authorization: `Bearer ${TOKEN}` } } } });
    expect(launch.stdin).toBeUndefined();
    expect([...launch.args, ...Object.values(launch.env)].join(" ")).not.toContain(TOKEN);
  });

  it("gives the program exactly its environment: the basics, the provider's key and base URL, the template's own", () => {
    expect(launchOf(template(), ctx()).env).toEqual({
      PATH: "/app/bin:/usr/bin", HOME: "/tmp", TMPDIR: "/tmp", HTTPS_PROXY: "http://proxy:3128",
      ANTHROPIC_API_KEY: "sk-ant-1", ANTHROPIC_BASE_URL: "https://llm-gateway.internal",
      MCP_TOOL_TIMEOUT: "3660000", CLAUDE_CONFIG_DIR: "/tmp/.claude", TIMEOUT_S: "3660",
    });
    const openai = launchOf(template({ provider: "openai", env: {} }), ctx({ providerBaseUrl: undefined })).env;
    expect(openai).toEqual({ PATH: "/app/bin:/usr/bin", HOME: "/tmp", TMPDIR: "/tmp", HTTPS_PROXY: "http://proxy:3128", OPENAI_API_KEY: "sk-openai" });
  });

  it("hands the task on stdin when the template says so, and an empty {system_prompt} when the stage has none", () => {
    const launch = launchOf(template({ stdin: "task" }), ctx({ instructions: undefined }));
    expect(launch.stdin).toBe("Task: digest the notes");
    expect(launch.args[7]).toBe("");
  });

  it("fails closed: {model} with no model for the provider, and a filled value that would carry the token", () => {
    expect(buildTemplateLaunch(template(), ctx({ model: undefined }))).toEqual({ ok: false, message: "spec.runtimeTemplates[claude-print].command[6]: {model} has no value for this Run (the Run and the stage name no model for the template's provider)" });
    const leak = { ok: false, message: "runtime template 'claude-print' would put the runtime token on the command line or in the environment: refused" };
    expect(buildTemplateLaunch(template(), ctx({ task: `leak ${TOKEN}` }))).toEqual(leak);
    expect(buildTemplateLaunch(template({ env: { X: "{home}" } }), ctx({ home: `/tmp/${TOKEN}` }))).toEqual(leak);
  });

  it("fillPlaceholders names the first placeholder it has no value for, even one the schema would have refused", () => {
    expect(fillPlaceholders("{task} {token} {nope}", { task: "t" }, "here")).toEqual({ ok: false, message: "here: {token} has no value for this Run" });
    expect(fillPlaceholders("a {task} b {task}", { task: "t" }, "here")).toEqual({ ok: true, value: "a t b t" });
  });
});

describe("buildTemplateAdapter", () => {
  it("names the template's program and provider, and takes what the client printed on stdout as its answer", () => {
    const adapter = buildTemplateAdapter(template());
    expect(adapter).toMatchObject({ program: "claude", provider: "anthropic", installs: "the program of runtime template 'claude-print'" });
    expect(adapter.readAnswer("\nThe digest.\n")).toEqual({ ok: true, answer: "The digest." });
    expect(adapter.readAnswer(" \n")).toEqual({ ok: false, message: "claude printed no answer on its standard output" });
    // leviath adapter asks checkLaunch before buildLaunch: a start it refuses is never built.
    expect(adapter.checkLaunch!(ctx())).toBeUndefined();
    expect(adapter.checkLaunch!(ctx({ model: undefined }))).toMatch(/\{model\} has no value for this Run/);
    expect(adapter.buildLaunch(ctx()).command).toBe("claude");
    expect(() => adapter.buildLaunch(ctx({ model: undefined }))).toThrow(/^buildLaunch after a refused checkLaunch: /);
  });
});
