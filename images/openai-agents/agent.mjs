#!/usr/bin/env node
// The `openai-agents` runtime: one Agent of the OpenAI Agents SDK (@openai/agents, installed beside this file,
// never part of the operator) whose only tools are the sidecar's, over MCP (streamable HTTP, the runtime token as
// a bearer header). Plain ESM so it runs unbuilt. Everything comes from the environment the adapter
// (src/runtime/adapters/openai-agents.ts) sets; the task is the one argument after `--`. Prints the agent's final
// output on stdout; the model hands the Run's result over with the sidecar's submit_output, as with the reference
// runtime. Exit codes: 0 the run finished, 1 it failed (the message on stderr), 2 a setting is missing.
import { Agent, MCPServerStreamableHttp, OpenAIProvider, Runner, setTracingDisabled } from "@openai/agents";

const INSTRUCTIONS = [
  "You work only through the tools you are given; each call is checked by a policy, and a refused call's result says why.",
  "When the task is done, hand the final answer over with the submit_output tool if it is offered, then answer with it.",
].join(" ");

function setting(name) {
  const value = process.env[name];
  if (value === undefined || value === "") {
    process.stderr.write(`openai-agents: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
}

const dash = process.argv.indexOf("--");
const task = dash === -1 ? undefined : process.argv[dash + 1];
if (task === undefined) {
  process.stderr.write("openai-agents: usage: agent.mjs -- <task>\n");
  process.exit(2);
}

// No trace leaves the container (the SDK would export each run's spans to OpenAI).
setTracingDisabled(true);

const sidecar = new MCPServerStreamableHttp({
  name: "leviath",
  url: setting("LEVIATH_SIDECAR_MCP_URL"),
  requestInit: { headers: { authorization: `Bearer ${setting("LEVIATH_SIDECAR_TOKEN")}` } },
  // A tool call may wait on a person's answer: longer than the policy's interaction timeout (the SDK's default is 60 s).
  timeout: Number(setting("LEVIATH_MCP_TIMEOUT_MS")),
  // The tool list is read again each turn, so a stage's change of tools is seen.
  cacheToolsList: false,
});

const provider = new OpenAIProvider({
  apiKey: process.env.OPENAI_API_KEY,
  ...(process.env.OPENAI_BASE_URL ? { baseURL: process.env.OPENAI_BASE_URL } : {}),
  useResponses: process.env.LEVIATH_OPENAI_API !== "chat_completions",
});

try {
  await sidecar.connect();
  // The stage's instructions (the blueprint's system_prompt and what the stage expects), after ours.
  const instructions = process.env.LEVIATH_INSTRUCTIONS ? `${INSTRUCTIONS}\n\n${process.env.LEVIATH_INSTRUCTIONS}` : INSTRUCTIONS;
  const agent = new Agent({ name: "leviath", instructions, mcpServers: [sidecar], ...(process.env.LEVIATH_MODEL ? { model: process.env.LEVIATH_MODEL } : {}) });
  const runner = new Runner({ modelProvider: provider, tracingDisabled: true, traceIncludeSensitiveData: false });
  const result = await runner.run(agent, task, { maxTurns: Number(process.env.LEVIATH_MAX_TURNS ?? "50") });
  process.stdout.write(`${String(result.finalOutput ?? "")}\n`);
} catch (err) {
  process.stderr.write(`openai-agents: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await sidecar.close().catch(() => undefined);
}
