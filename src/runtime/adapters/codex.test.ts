import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { buildCodexConfig, CODEX_DEFAULT_MODEL, CODEX_KEY_ENV, CODEX_TOKEN_ENV, launchCodex, readCodexAnswer } from "./codex.ts";
import type { LaunchContext } from "./launch.ts";

const ctx: LaunchContext = {
  sidecarUrl: "http://127.0.0.1:8181", token: "tok-secret", home: "/tmp", workdir: "/workspace", task: "-rm everything",
  providerBaseUrl: 'http://gw.example/v1?x="1"', toolTimeoutSeconds: 330, env: { PATH: "/bin", OPENAI_API_KEY: "sk-1", SECRET_ELSEWHERE: "no" },
};

describe("launchCodex", () => {
  it("keeps the token out of argv and files, and the task after --", () => {
    const launch = launchCodex(ctx);
    expect(launch.args.slice(-2)).toEqual(["--", "-rm everything"]);
    expect(JSON.stringify([launch.args, launch.files])).not.toContain("tok-secret");
    expect(launch.env[CODEX_TOKEN_ENV]).toBe("tok-secret");
  });

  it("passes only the variables it names: the Run's key, not the rest of the container's environment", () => {
    const launch = launchCodex(ctx);
    expect(Object.keys(launch.env).sort()).toEqual(["CODEX_HOME", "HOME", "NO_COLOR", CODEX_KEY_ENV, CODEX_TOKEN_ENV, "PATH"].sort());
    expect(Object.keys(launchCodex({ ...ctx, env: {} }).env)).not.toContain(CODEX_KEY_ENV);
  });

  it("writes a config.toml that parses to the settings, strings escaped, the tool timeout past the adapter's", () => {
    const config = parse(buildCodexConfig(ctx)) as Record<string, Record<string, Record<string, unknown>> & unknown>;
    expect(config["model"]).toBe(CODEX_DEFAULT_MODEL);
    expect(config["model_providers"]?.["leviath"]).toMatchObject({ base_url: 'http://gw.example/v1?x="1"', env_key: CODEX_KEY_ENV, wire_api: "responses" });
    const server = config["mcp_servers"]?.["leviath"] as Record<string, unknown>;
    expect(server).toMatchObject({ url: "http://127.0.0.1:8181/mcp", bearer_token_env_var: CODEX_TOKEN_ENV, required: true, default_tools_approval_mode: "approve" });
    expect(server["tool_timeout_sec"]).toBeGreaterThan(ctx.toolTimeoutSeconds);
    expect(config["approval_policy"]).toBe("never");
  });
  it("gives the stage's instructions as developer_instructions (escaped), and none when the stage has none", () => {
    const instructions = 'Survey the "notes".\nThen choose.';
    expect((parse(buildCodexConfig({ ...ctx, instructions })) as Record<string, unknown>)["developer_instructions"]).toBe(instructions);
    expect(buildCodexConfig(ctx)).not.toContain("developer_instructions");
  });
});

describe("readCodexAnswer", () => {
  it("is the last message Codex wrote to its file (written empty first), never its stdout", () => {
    const launch = launchCodex(ctx);
    expect(launch.args).toContain("--output-last-message");
    expect(launch.files.find((f) => f.path === launch.answerFile)?.content).toBe("");
    expect(readCodexAnswer("noise", "The answer.\n")).toEqual({ ok: true, answer: "The answer." });
    expect(readCodexAnswer("The answer.", "")).toEqual({ ok: false, message: "codex wrote no final message" });
    expect(readCodexAnswer("The answer.")).toEqual({ ok: false, message: "codex wrote no final message" });
  });
});
