import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { CODEX_MCP_SERVER, CODEX_TOKEN_ENV, launchCodex } from "../../src/runtime/adapters/codex.ts";
import type { LaunchContext } from "../../src/runtime/adapters/launch.ts";
import { CODEX, ensureClient } from "../clients/install-client.ts";
import { startScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { FINAL_ANSWER, itWentThroughTheSidecar, pathWith, runScenario, startLaunch, type ScenarioOutcome } from "./runtime-scenario.ts";
import { makeTempDir } from "./sidecar-harness.ts";

// The real Codex CLI (npm @openai/codex, pinned) started by `leviath adapter codex`, against the real sidecar and
// the stand-in speaking OpenAI's Responses API: every call goes through /mcp, each refusal reaches the model as
// Codex shows a tool's result, and the model is offered nothing of Codex's own that acts outside the sidecar.
const NAMESPACE = `mcp__${CODEX_MCP_SERVER}`;
// Codex's readers of MCP resources: they only ask the configured MCP servers (the sidecar) for resources.
const CODEX_RESOURCE_READERS = ["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"];
// A current model: Codex's bundled catalog gives it code mode, apply_patch and tool search, which the adapter's own
// catalog takes away (with an unknown name Codex would fall back to plain settings and prove nothing).
const CURRENT_MODEL = "gpt-6.2-sol";
let run: ScenarioOutcome;
let bin = "";

beforeAll(async () => {
  bin = ensureClient(CODEX);
  run = await runScenario("codex", { toolName: (t) => `${NAMESPACE}__${t}`, path: bin, model: CURRENT_MODEL });
}, 900_000); // the first run installs Codex from npm

describe("leviath adapter codex: codex exec through the sidecar", () => {
  itWentThroughTheSidecar(() => run, "/v1/responses", "codex");

  it("the model gets the Run's task and nothing from stdin (the adapter gives Codex an empty, closed stdin)", () => {
    const input = JSON.stringify(run.requests[0]?.body["input"]);
    expect(input).toContain("Task: Summarise notes.md.");
    expect(input).not.toContain("<stdin>");
  });

  it("the answer handed over is Codex's last message, from the file it wrote (--output-last-message)", () => {
    expect(readFileSync(`${run.root}/home/.codex/last-message.md`, "utf8").trim()).toBe(FINAL_ANSWER);
  });

  it("only the sidecar's tools are offered: no shell, patch, web search or other tool of Codex's own", () => {
    for (const req of run.requests) {
      const tools = req.body["tools"] as { type: string; name: string; tools?: { name: string }[] }[];
      const namespaces = tools.filter((t) => t.type === "namespace");
      expect(namespaces.map((t) => t.name)).toEqual([NAMESPACE]);
      expect(namespaces[0]?.tools?.map((t) => t.name).sort()).toEqual([...run.sidecarTools].sort());
      expect(tools.filter((t) => t.type !== "namespace").map((t) => `${t.type}:${t.name}`)).toEqual(CODEX_RESOURCE_READERS.map((n) => `function:${n}`));
      // The adapter's catalog, not Codex's bundled one, set the model's tools and its system prompt.
      const developer = (req.body["input"] as { role?: string; content?: { text?: string }[] }[]).find((i) => i.role === "developer");
      expect(developer?.content?.[0]?.text).toMatch(/^You act only through the tools you are given;/);
    }
  });

  it("the runtime token is only in the client's environment: not on its command line, not in its config", () => {
    expect(run.launch.args.join(" ")).not.toContain(run.token);
    expect(run.launch.env[CODEX_TOKEN_ENV]).toBe(run.token);
    const config = readFileSync(`${run.root}/home/.codex/config.toml`, "utf8");
    expect(config).not.toContain(run.token);
    expect(run.tokenFiles).toEqual([]);
    expect(config).toContain(`bearer_token_env_var = "${CODEX_TOKEN_ENV}"`);
  });
});

describe("codex exec fails closed", () => {
  const failedStart = async (config: (text: string) => string) => {
    const model = await startScriptedModelServer([{ turn: { text: "never asked" } }]);
    const root = makeTempDir("leviath-runtime-codex-closed-");
    try {
      const ctx: LaunchContext = { sidecarUrl: "http://127.0.0.1:9", token: "t", home: root, workdir: root, task: "hi", model: CURRENT_MODEL, providerBaseUrl: `${model.url}/v1`, toolTimeoutSeconds: 60, env: { PATH: pathWith(bin), OPENAI_API_KEY: "k" } };
      const launch = launchCodex(ctx);
      const outcome = await startLaunch({ ...launch, files: launch.files.map((f) => (f.path.endsWith("config.toml") ? { ...f, content: config(f.content) } : f)) }, root);
      return { outcome, requests: model.requests.length };
    } finally {
      await model.close();
    }
  };

  it("a setting this version does not know stops the start (--strict-config): a renamed key cannot turn a protection off unseen", async () => {
    const { outcome, requests } = await failedStart((text) => text.replace("approval_policy", "aproval_policy"));
    expect(outcome.code).not.toBe(0);
    expect(outcome.stderrTail).toContain("unknown configuration field `aproval_policy`");
    expect(requests).toBe(0);
  }, 120_000);

  it("no sidecar, no run (required = true): the model is never asked", async () => {
    const { outcome, requests } = await failedStart((text) => text);
    expect(outcome.code).not.toBe(0);
    expect(outcome.stderrTail).toContain("required MCP servers failed to initialize");
    expect(requests).toBe(0);
  }, 120_000);
});
