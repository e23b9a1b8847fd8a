import { beforeAll, describe, expect, it } from "vitest";
import { launchOpenAiAgents, OPENAI_AGENTS_API_ENV, OPENAI_AGENTS_COMMAND } from "../../src/runtime/adapters/openai-agents.ts";
import { ensureClient, OPENAI_AGENTS } from "../clients/install-client.ts";
import { startScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { decisionRows, expectAnswerHandedOver, itWentThroughTheSidecar, lastToolOutput, pathWith, runScenario, SCENARIO_DECISIONS, startLaunch, type ScenarioOutcome } from "./runtime-scenario.ts";
import { makeTempDir } from "./sidecar-harness.ts";

// Our program on the real OpenAI Agents SDK (npm @openai/agents, pinned) started by `leviath adapter openai-agents`,
// against the real sidecar and the stand-in speaking OpenAI's Responses API: every call goes through /mcp,
// each refusal reaches the model as the SDK shows a tool's result, and the sidecar's tools are the only ones.
let run: ScenarioOutcome;
let bin = "";

beforeAll(async () => {
  bin = ensureClient(OPENAI_AGENTS);
  run = await runScenario("openai-agents", { toolName: (t) => t, path: bin, model: "gpt-test" });
}, 900_000); // the first run installs the SDK from npm

describe("leviath adapter openai-agents: the Agents SDK program through the sidecar", () => {
  itWentThroughTheSidecar(() => run, "/v1/responses", OPENAI_AGENTS_COMMAND);

  it("only the sidecar's tools are offered, as function tools", () => {
    for (const req of run.requests) {
      const tools = req.body["tools"] as { type: string; name: string }[];
      expect(tools.every((t) => t.type === "function")).toBe(true);
      expect(tools.map((t) => t.name).sort()).toEqual([...run.sidecarTools].sort());
    }
  });

  it("the runtime token is only in the program's environment, not on its command line", () => {
    expect(run.launch.args).toEqual(["--", "Task: Summarise notes.md."]);
    expect(run.launch.env["LEVIATH_SIDECAR_TOKEN"]).toBe(run.token);
    expect(run.launch.files).toEqual([]);
    expect(run.tokenFiles).toEqual([]);
  });
});

describe("the Agents SDK program through the sidecar, on Chat Completions", () => {
  it("a gateway that speaks only Chat Completions: the same calls and refusals, each request valid", async () => {
    const chat = await runScenario("openai-agents", { toolName: (t) => t, path: bin, model: "gpt-test", env: { [OPENAI_AGENTS_API_ENV]: "chat_completions" } });
    expectAnswerHandedOver(chat, OPENAI_AGENTS_COMMAND);
    expect(chat.requests.map((r) => [r.path, r.refused])).toEqual(chat.requests.map(() => ["/v1/chat/completions", undefined]));
    expect(decisionRows(chat)).toEqual(SCENARIO_DECISIONS);
    expect(lastToolOutput(chat.requests[2])).toContain("would escape the working directory");
    expect(lastToolOutput(chat.requests[3])).toContain("[blocked] Tool 'shell'");
    const offered = (chat.requests[0]?.body["tools"] as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered.sort()).toEqual([...chat.sidecarTools].sort());
  }, 120_000);
});

describe("the Agents SDK program fails closed", () => {
  it("no sidecar, no run: exit 1 and the model never asked; a missing setting: exit 2", async () => {
    const model = await startScriptedModelServer([{ turn: { text: "never asked" } }]);
    try {
      const root = makeTempDir("leviath-runtime-agents-closed-");
      const launch = launchOpenAiAgents({ sidecarUrl: "http://127.0.0.1:9", token: "t", home: root, workdir: root, task: "hi", model: "gpt-test", providerBaseUrl: `${model.url}/v1`, toolTimeoutSeconds: 60, env: { PATH: pathWith(bin), OPENAI_API_KEY: "k" } });
      const down = await startLaunch(launch, root);
      expect(down.code).toBe(1);
      expect(down.stderrTail).toMatch(/(^|\n)openai-agents: .+\n$/);
      const { LEVIATH_SIDECAR_TOKEN: _token, ...withoutToken } = launch.env;
      const unset = await startLaunch({ ...launch, env: withoutToken }, root);
      expect([unset.code, unset.stderrTail]).toEqual([2, "openai-agents: LEVIATH_SIDECAR_TOKEN is not set\n"]);
      expect(model.requests).toHaveLength(0);
    } finally {
      await model.close();
    }
  }, 120_000);
});
