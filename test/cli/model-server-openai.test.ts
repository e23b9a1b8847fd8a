import { afterEach, describe, expect, it } from "vitest";
import { buildOpenAiBody } from "../../src/runtime/reference/providers/openai.ts";
import { checkChatCompletionsRequest } from "../../src/model-server/responses-api.ts";
import { startScriptedModelServer, type ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";

// The stand-in's OpenAI side over real HTTP: a request OpenAI would refuse is answered with OpenAI's 400 and error
// body and takes no script step; a valid one gets the response object, or its SSE events in the documented order.
let server: ScriptedModelServer;
afterEach(() => server.close());

const readFile = { type: "function", name: "read_file", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } };
const send = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const errorOf = async (res: Response) => ((await res.json()) as { error: { message: string; type: string; param: string | null } }).error;

describe("Responses API requests the service refuses", () => {
  const cases: [string, Record<string, unknown>, RegExp, string | null][] = [
    ["an unknown input item type", { input: [{ type: "shell_output", output: "x" }] }, /^Invalid value: 'shell_output'\. Supported values are: 'message', 'function_call', /, "input[0].type"],
    ["a function tool without a name", { tools: [{ type: "function", parameters: readFile.parameters }] }, /^Missing required parameter: 'tools\[0\]\.name'\.$/, "tools[0].name"],
    ["a function name outside the allowed pattern", { tools: [{ ...readFile, name: "read file" }] }, /string does not match pattern/, "tools[0].name"],
    ["parameters that are not an object schema", { tools: [{ ...readFile, parameters: { type: "string" } }] }, /^Invalid schema for function 'read_file': schema must be a JSON Schema of 'type: "object"', got 'type: "string"'/, "tools[0].parameters"],
    ["a strict schema left open", { tools: [{ ...readFile, strict: true }] }, /'additionalProperties' is required to be supplied and to be false/, "tools[0].parameters"],
    ["an unknown tool type", { tools: [{ type: "shell_exec", name: "x" }] }, /^Invalid value for 'tools\[0\]\.type'\. Supported values are: 'function', 'namespace', /, "tools[0].type"],
    ["an unknown parameter", { temperature_bias: 1 }, /^Unknown parameter: 'temperature_bias'\.$/, "temperature_bias"],
    ["a tool output answering no call", { input: [{ role: "user", content: "hi" }, { type: "function_call_output", call_id: "call_9", output: "x" }] }, /^No tool call found for function call output with call_id call_9\.$/, "input"],
    ["tool_choice naming an absent function", { tools: [readFile], tool_choice: { type: "function", name: "shell" } }, /not found in 'tools' parameter/, "tool_choice"],
  ];
  it.each(cases)("%s: 400 invalid_request_error, no step taken", async (_what, extra, message, param) => {
    server = await startScriptedModelServer([{ turn: { text: "never sent" } }]);
    const res = await send("/v1/responses", { model: "gpt-test", input: "hi", ...extra });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.type).toBe("invalid_request_error");
    expect(error.message).toMatch(message);
    expect(error.param).toBe(param);
    expect(server.remaining()).toBe(1);
    expect(server.requests[0]?.refused).toBe(error.message);
  });
});

describe("Chat Completions requests the service refuses", () => {
  it("a tool message that answers no call, and a call left unanswered", async () => {
    server = await startScriptedModelServer([{ turn: { text: "never sent" } }]);
    const orphan = await send("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "hi" }, { role: "tool", tool_call_id: "c1", content: "x" }] });
    expect(orphan.status).toBe(400);
    expect((await errorOf(orphan)).message).toBe("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.");
    const call = { id: "c1", type: "function", function: { name: "read_file", arguments: "{}" } };
    const open = await send("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "hi" }, { role: "assistant", content: null, tool_calls: [call] }, { role: "user", content: "and?" }] });
    expect(open.status).toBe(400);
    expect((await errorOf(open)).message).toMatch(/The following tool_call_ids did not have response messages: c1$/);
    const badTool = await send("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", name: "read_file" }] });
    expect(badTool.status).toBe(400);
    expect(await errorOf(badTool)).toMatchObject({ message: "Missing required parameter: 'tools[0].function'.", param: "tools[0].function" });
    expect(server.remaining()).toBe(1);
  });
});

describe("Responses API answers", () => {
  it("buffered: the response object with the call and the text, echoing the request's settings", async () => {
    server = await startScriptedModelServer([{ turn: { text: "reading", calls: [{ name: "read_file", args: { path: "a.md" } }] } }]);
    const res = await send("/v1/responses", { model: "gpt-test", input: [{ role: "user", content: "hi" }], tools: [readFile], store: false });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      id: "resp_1", object: "response", status: "completed", model: "gpt-test", store: false, tools: [readFile],
      output: [
        { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "reading", annotations: [] }] },
        { type: "function_call", status: "completed", call_id: "call_1_0", name: "read_file", arguments: '{"path":"a.md"}' },
      ],
      usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 },
    });
    expect(server.requests[0]?.refused).toBeUndefined();
  });

  it("streamed: the documented events in order, numbered, the deltas adding up to the arguments", async () => {
    server = await startScriptedModelServer([{ turn: { calls: [{ name: "read_file", args: { path: "a.md" } }] } }]);
    const res = await send("/v1/responses", { model: "gpt-test", input: "hi", tools: [readFile], stream: true });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const events = (await res.text()).split("\n\n").filter((f) => f !== "").map((f) => JSON.parse(/^data: (.*)$/m.exec(f)?.[1] ?? "{}") as { type: string; sequence_number: number; delta?: string; arguments?: string });
    expect(events.map((e) => e.type)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"]);
    expect(events.map((e) => e.sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(events.filter((e) => e.type.endsWith(".delta")).map((e) => e.delta).join("")).toBe('{"path":"a.md"}');
    expect(events[5]?.arguments).toBe('{"path":"a.md"}');
  });

  it("a call to a namespaced tool names its namespace, as Codex's MCP tools are called", async () => {
    server = await startScriptedModelServer([{ turn: { calls: [{ name: "mcp__leviath__read_file", args: { path: "a.md" } }] } }]);
    const res = await send("/v1/responses", { model: "gpt-test", input: "hi", tools: [{ type: "namespace", name: "mcp__leviath", description: "The sidecar", tools: [readFile] }] });
    expect(((await res.json()) as { output: unknown[] }).output).toMatchObject([{ type: "function_call", namespace: "mcp__leviath", name: "read_file" }]);
  });
});

describe("the reference runtime's Chat Completions body", () => {
  it("passes the service's checks: system prompt, a call, its result, the sidecar's tools, sampling, streaming", () => {
    const body = buildOpenAiBody({
      model: "gpt-test", system: "You are careful.",
      messages: [
        { role: "user", text: "read it" },
        { role: "assistant", text: "", toolCalls: [{ id: "call_1", name: "read_file", args: { path: "a.md" } }] },
        { role: "tool", callId: "call_1", name: "read_file", content: "[error] refused", isError: true },
      ],
      tools: [{ name: "read_file", description: readFile.description, inputSchema: readFile.parameters }],
      sampling: { temperature: 0.2, topP: 0.9, maxTokens: 512, stop: ["END"] },
    }, true);
    expect(checkChatCompletionsRequest(body)).toBeUndefined();
    expect(checkChatCompletionsRequest({ ...body, messages: [{ role: "user", content: "hi" }, { role: "assistant", content: null }] })).toMatchObject({ message: "Invalid value for 'content': expected a string, got null." });
  });
});
