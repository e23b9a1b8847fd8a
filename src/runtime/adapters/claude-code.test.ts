import { describe, expect, it } from "vitest";
import { buildClaudeCodeLaunch, readClaudeCodeAnswer } from "./claude-code.ts";
import type { LaunchContext } from "./launch.ts";

const TOKEN = "runtime-token-0123456789abcdef";
const ctx = (over: Partial<LaunchContext> = {}): LaunchContext => ({
  sidecarUrl: "http://127.0.0.1:7777",
  token: TOKEN,
  home: "/tmp",
  workdir: "/workspace",
  task: "Task: digest the notes",
  toolTimeoutSeconds: 3660,
  env: { PATH: "/app/bin:/usr/bin", ANTHROPIC_API_KEY: "sk-ant-1", KUBERNETES_SERVICE_HOST: "10.0.0.1", AWS_SECRET_ACCESS_KEY: "nope", HTTPS_PROXY: "http://proxy:3128" },
  ...over,
});

describe("buildClaudeCodeLaunch", () => {
  it("runs claude -p with the sidecar's MCP server alone, its own tools off and no permission prompt", () => {
    const launch = buildClaudeCodeLaunch(ctx({ model: "claude-sonnet-4-6" }));
    expect(launch.command).toBe("claude");
    const flag = (name: string) => launch.args[launch.args.indexOf(name) + 1];
    expect(launch.args).toEqual(expect.arrayContaining(["-p", "--bare", "--strict-mcp-config", "--no-session-persistence"]));
    expect(flag("--tools")).toBe("");
    expect(flag("--mcp-config")).toBe("/tmp/.leviath/claude-code/mcp.json");
    expect(flag("--permission-mode")).toBe("dontAsk");
    expect(flag("--permission-prompts")).toBe("none");
    expect(flag("--allowedTools")).toBe("mcp__leviath");
    expect(flag("--setting-sources")).toBe("user");
    expect(flag("--output-format")).toBe("json");
    expect(flag("--model")).toBe("claude-sonnet-4-6");
    // The task goes on stdin (a command line holds 128 KiB per argument), the token only into the 0600 file.
    expect(launch.stdin).toBe("Task: digest the notes");
    expect(launch.args.join(" ")).not.toContain(TOKEN);
    expect(Object.values(launch.env).join(" ")).not.toContain(TOKEN);
    expect(launch.files).toEqual([{ path: "/tmp/.leviath/claude-code/mcp.json", content: expect.any(String) }]);
    expect(JSON.parse(launch.files[0]!.content)).toEqual({ mcpServers: { leviath: { type: "http", url: "http://127.0.0.1:7777/mcp", headers: { Authorization: `Bearer ${TOKEN}` } } } });
  });

  it("gives the program exactly its environment: the credential and proxy passed on, nothing else of the container's", () => {
    const { env } = buildClaudeCodeLaunch(ctx({ providerBaseUrl: "https://llm-gateway.internal" }));
    expect(env).toMatchObject({ PATH: "/app/bin:/usr/bin", HOME: "/tmp", ANTHROPIC_API_KEY: "sk-ant-1", HTTPS_PROXY: "http://proxy:3128", ANTHROPIC_BASE_URL: "https://llm-gateway.internal" });
    expect(env).not.toHaveProperty("KUBERNETES_SERVICE_HOST");
    expect(env).not.toHaveProperty("AWS_SECRET_ACCESS_KEY");
    // Telemetry, error reports, updates, other traffic, memory and CLAUDE.md files: each switch is on.
    const switches = Object.entries(env).filter(([k]) => /^(CLAUDE_CODE_)?DISABLE_/.test(k));
    expect(switches.length).toBe(7);
    expect(switches.every(([, v]) => v === "1")).toBe(true);
    // A tool call may wait as long as a prompt can (the interaction timeout plus the adapter's margin).
    expect(env["MCP_TOOL_TIMEOUT"]).toBe("3660000");
    expect(env["CLAUDE_CONFIG_DIR"]).toBe("/tmp/.leviath/claude-code/config");
    expect(buildClaudeCodeLaunch(ctx()).env).not.toHaveProperty("ANTHROPIC_BASE_URL");
    expect(buildClaudeCodeLaunch(ctx()).args).not.toContain("--model");
  });

  it("adds the entry stage's system prompt to Claude Code's own, from a file", () => {
    const launch = buildClaudeCodeLaunch(ctx({ instructions: "Survey the notes." }));
    expect(launch.args.slice(-2)).toEqual(["--append-system-prompt-file", "/tmp/.leviath/claude-code/instructions.md"]);
    expect(launch.files).toContainEqual({ path: "/tmp/.leviath/claude-code/instructions.md", content: "Survey the notes." });
    expect(buildClaudeCodeLaunch(ctx()).args).not.toContain("--append-system-prompt-file");
  });
});

describe("readClaudeCodeAnswer", () => {
  it("takes the result of a successful run", () => {
    const out = `${JSON.stringify({ type: "result", subtype: "success", is_error: false, result: "the digest" })}\n`;
    expect(readClaudeCodeAnswer(out)).toEqual({ ok: true, answer: "the digest" });
  });

  it.each([
    ["", "claude printed no JSON result"],
    ["not json", "claude printed no JSON result"],
    ["{broken", "claude printed no JSON result"],
    [JSON.stringify({ type: "assistant" }), "claude printed no JSON result"],
    [JSON.stringify({ type: "result", subtype: "error_max_turns", is_error: true }), "claude ended with error_max_turns"],
    [JSON.stringify({ type: "result", subtype: "success", is_error: true, result: "API Error: 401" }), "claude ended with success: API Error: 401"],
  ])("refuses %j", (out, message) => {
    expect(readClaudeCodeAnswer(out)).toEqual({ ok: false, message });
  });
});
