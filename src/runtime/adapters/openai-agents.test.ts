import { describe, expect, it } from "vitest";
import type { LaunchContext } from "./launch.ts";
import { launchOpenAiAgents, readOpenAiAgentsAnswer, OPENAI_AGENTS_API_ENV, OPENAI_AGENTS_COMMAND, OPENAI_AGENTS_INSTRUCTIONS_ENV } from "./openai-agents.ts";

const ctx: LaunchContext = { sidecarUrl: "http://127.0.0.1:8181", token: "tok-secret", home: "/tmp", workdir: "/workspace", task: "--help", toolTimeoutSeconds: 330, env: { OTHER: "x" } };

describe("launchOpenAiAgents", () => {
  it("runs the program on the task, the token only in its environment, no file written", () => {
    const launch = launchOpenAiAgents(ctx);
    expect([launch.command, ...launch.args]).toEqual([OPENAI_AGENTS_COMMAND, "--", "--help"]);
    expect(launch.files).toEqual([]);
    expect(launch.env["LEVIATH_SIDECAR_TOKEN"]).toBe("tok-secret");
  });

  it("gives the MCP client longer than the adapter's tool timeout, tracing off, and nothing it was not given", () => {
    const env = launchOpenAiAgents(ctx).env;
    expect(Number(env["LEVIATH_MCP_TIMEOUT_MS"])).toBeGreaterThan(ctx.toolTimeoutSeconds * 1000);
    expect(env["OPENAI_AGENTS_DISABLE_TRACING"]).toBe("1");
    expect(Object.keys(env).sort()).toEqual(["HOME", "LEVIATH_MCP_TIMEOUT_MS", "LEVIATH_SIDECAR_MCP_URL", "LEVIATH_SIDECAR_TOKEN", "OPENAI_AGENTS_DISABLE_TRACING", "PATH"]);
  });

  it("passes the stage's instructions in its environment, when there are any", () => {
    const launch = launchOpenAiAgents({ ...ctx, instructions: "Survey the notes.\nThen choose." });
    expect(launch.env[OPENAI_AGENTS_INSTRUCTIONS_ENV]).toBe("Survey the notes.\nThen choose.");
    expect(launch.args).toEqual(["--", "--help"]);
    expect(launchOpenAiAgents({ ...ctx, instructions: "" }).env).not.toHaveProperty(OPENAI_AGENTS_INSTRUCTIONS_ENV);
  });

  it("switches to Chat Completions only on the exact word", () => {
    expect(launchOpenAiAgents({ ...ctx, env: { [OPENAI_AGENTS_API_ENV]: "chat_completions" } }).env[OPENAI_AGENTS_API_ENV]).toBe("chat_completions");
    expect(launchOpenAiAgents({ ...ctx, env: { [OPENAI_AGENTS_API_ENV]: "chat" } }).env[OPENAI_AGENTS_API_ENV]).toBeUndefined();
  });
});

describe("readOpenAiAgentsAnswer", () => {
  it("is everything the program printed, less its last newline; nothing printed is no answer", () => {
    expect(readOpenAiAgentsAnswer("line one\nline two\n")).toEqual({ ok: true, answer: "line one\nline two" });
    expect(readOpenAiAgentsAnswer(" \n")).toEqual({ ok: false, message: `${OPENAI_AGENTS_COMMAND} printed no final output` });
  });
});
