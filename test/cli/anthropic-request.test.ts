// The scripted model server's check of Anthropic Messages requests: what the real API refuses is refused here too
// (answered 400 invalid_request_error and recorded), so a client test cannot pass on a request the service rejects.
import { describe, expect, it } from "vitest";
import { checkAnthropicRequest } from "../../src/model-server/anthropic-request.ts";
import { checkRequest } from "../../src/model-server/request-check.ts";
import { startScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";

const HEADERS = { "anthropic-version": "2023-06-01", "x-api-key": "k" };
const ok = { model: "claude-test", max_tokens: 64, messages: [{ role: "user", content: "hi" }] };
const call = { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "a" } }] };
const answer = (id: string) => ({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "text" }] });
const cached = { type: "text", text: "x", cache_control: { type: "ephemeral" } };

describe("checkAnthropicRequest", () => {
  it("takes a request the API takes, tool turns included", () => {
    expect(checkAnthropicRequest(ok, HEADERS)).toEqual([]);
    // `display` on thinking of either kind, as Claude Code sends it with a named model (the SDK types declare it).
    expect(checkAnthropicRequest({ ...ok, max_tokens: 2048, thinking: { type: "enabled", budget_tokens: 1024, display: "omitted" } }, HEADERS)).toEqual([]);
    expect(checkAnthropicRequest({ ...ok, thinking: { type: "adaptive", display: null } }, HEADERS)).toEqual([]);
    expect(checkAnthropicRequest({ ...ok, messages: [...ok.messages, call, answer("toolu_1")], tools: [{ name: "read_file", input_schema: { type: "object" } }] }, HEADERS)).toEqual([]);
  });

  it.each([
    ["an unknown top-level key", { ...ok, temperture: 0.5 }, "Unrecognized key"],
    ["no max_tokens", { model: "m", messages: ok.messages }, "max_tokens"],
    ["an assistant first", { ...ok, messages: [{ role: "assistant", content: "hi" }] }, "the first message must be the user's"],
    ["a tool_use with no tool_result after it", { ...ok, messages: [...ok.messages, call, answer("toolu_2")] }, "tool_use ids without a tool_result right after: toolu_1"],
    ["a tool name the API refuses", { ...ok, tools: [{ name: "read file", input_schema: { type: "object" } }] }, "tools.0.name"],
    ["two tools of one name", { ...ok, tools: [{ name: "a", input_schema: { type: "object" } }, { name: "a", input_schema: { type: "object" } }] }, "tool names must be unique"],
    ["five cache_control markers", { ...ok, system: [cached, cached, cached, cached, cached] }, "a maximum of 4 blocks with cache_control"],
    ["a thinking budget not below max_tokens", { ...ok, thinking: { type: "enabled", budget_tokens: 1024 } }, "must be greater than thinking.budget_tokens"],
    ["an unknown thinking display", { ...ok, max_tokens: 2048, thinking: { type: "enabled", budget_tokens: 1024, display: "full" } }, "thinking"],
    ["an empty text block", { ...ok, messages: [{ role: "user", content: [{ type: "text", text: "" }] }] }, "messages.0.content"],
  ])("refuses %s", (_what, body, problem) => {
    expect(checkAnthropicRequest(body, HEADERS).join("; ")).toContain(problem);
  });

  it("refuses a request without the version header or a key", () => {
    expect(checkAnthropicRequest(ok, {})).toEqual(["header anthropic-version: 'undefined'", "no x-api-key or authorization header"]);
  });

  it("is the one request check's for the anthropic protocol, on unless a test turns checks off", () => {
    expect(checkRequest("anthropic", ok, HEADERS)).toBeUndefined();
    expect(checkRequest("anthropic", ok, {})).toEqual({ protocol: "anthropic", message: "header anthropic-version: 'undefined'; no x-api-key or authorization header", param: null });
    expect(checkRequest("anthropic", ok, {}, { checkRequests: false })).toBeUndefined();
    expect(checkRequest("openai", { model: "m" }, {})).toEqual({ protocol: "openai", message: "Missing required parameter: 'messages'.", param: "messages" });
  });

  it("makes the server answer 400 invalid_request_error in Anthropic's error body and take no step, by default", async () => {
    const server = await startScriptedModelServer([{ turn: { text: "hello" } }]);
    try {
      const res = await fetch(`${server.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", ...HEADERS }, body: JSON.stringify({ ...ok, stream: "yes" }) });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("stream") as unknown } });
      expect(server.requests[0]!.refused).toEqual(expect.stringContaining("stream"));
      expect(server.remaining()).toBe(1);
    } finally {
      await server.close();
    }
  });
});
