// Both wire protocols against a real local HTTP server speaking them (the scripted model server): buffered and
// streamed turns with tool calls, retries that respect retry-after, and the seed's caps with upstream's messages.
import { afterEach, describe, expect, it } from "vitest";
import { startScriptedModelServer, type ScriptedModelServer, type ScriptStep } from "../../../model-server/scripted-model-server.ts";
import { createAnthropicProvider } from "./anthropic.ts";
import { createOpenAiProvider } from "./openai.ts";
import type { RetryPolicy } from "./provider-http.ts";
import { ProviderError, type ModelProvider, type ModelRequest } from "./types.ts";

let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const slept: number[] = [];
const retry: RetryPolicy = { maxRetries: 2, baseDelayMs: 100, maxDelayMs: 5_000, random: () => 0, sleep: async (ms) => void slept.push(ms) };

const request: ModelRequest = {
  model: "test-model",
  system: "You are terse.",
  messages: [
    { role: "user", text: "Read notes.md" },
    { role: "assistant", text: "Reading.", toolCalls: [{ id: "t1", name: "read_file", args: { path: "notes.md" } }, { id: "t2", name: "list_dir", args: {} }] },
    { role: "tool", callId: "t1", name: "read_file", content: "ship it", isError: false },
    { role: "tool", callId: "t2", name: "list_dir", content: "[denied] no", isError: true },
  ],
  tools: [{ name: "read_file", description: "Read a file", inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } }],
  sampling: { temperature: 0.2, maxTokens: 512 },
};

type Make = (url: string, stream: boolean) => ModelProvider;
const protocols: [string, Make][] = [
  ["anthropic", (url, stream) => createAnthropicProvider({ baseUrl: url, apiKey: "sk-ant-test", stream, retry })],
  ["openai", (url, stream) => createOpenAiProvider({ baseUrl: `${url}/v1`, apiKey: "sk-oai-test", stream, retry })],
];

async function serve(script: ScriptStep[]): Promise<ScriptedModelServer> {
  server = await startScriptedModelServer(script);
  slept.length = 0;
  return server;
}

describe.each(protocols)("the %s provider", (protocol, make) => {
  it.each([true, false])("returns text and tool calls (stream %s)", async (stream) => {
    const s = await serve([{ turn: { text: "Let me look.", calls: [{ name: "read_file", args: { path: "a b.md", n: [1, 2] } }] } }]);
    const turn = await make(s.url, stream).complete(request);
    expect(turn.text).toBe("Let me look.");
    expect(turn.toolCalls).toEqual([{ id: expect.any(String), name: "read_file", args: { path: "a b.md", n: [1, 2] } }]);
    expect(turn.stopReason).toBe("tool_calls");
    expect(s.requests).toHaveLength(1);
    const sent = s.requests[0]!;
    expect(sent.protocol).toBe(protocol);
    expect(sent.body["stream"]).toBe(stream ? true : undefined);
    expect(sent.body["model"]).toBe("test-model");
    if (protocol === "anthropic") {
      expect(sent.headers["x-api-key"]).toBe("sk-ant-test");
      expect(sent.headers["anthropic-version"]).toBe("2023-06-01");
      expect(sent.body["system"]).toBe("You are terse.");
      expect(sent.body["max_tokens"]).toBe(512);
      // Both tool results of one turn travel in one user message.
      const messages = sent.body["messages"] as { role: string; content: { type: string; is_error?: boolean }[] }[];
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
      expect(messages[2]!.content.map((b) => [b.type, b.is_error ?? false])).toEqual([["tool_result", false], ["tool_result", true]]);
    } else {
      expect(sent.headers["authorization"]).toBe("Bearer sk-oai-test");
      const messages = sent.body["messages"] as { role: string; tool_calls?: { function: { arguments: string } }[] }[];
      expect(messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool"]);
      expect(JSON.parse(messages[2]!.tool_calls![0]!.function.arguments)).toEqual({ path: "notes.md" });
      expect(sent.body["max_tokens"]).toBe(512);
    }
  });

  it("ends a turn without tool calls", async () => {
    const s = await serve([{ turn: { text: "Done." } }]);
    const turn = await make(s.url, true).complete(request);
    expect(turn).toMatchObject({ text: "Done.", toolCalls: [], stopReason: "end" });
  });

  it("waits what retry-after says after a 429, then succeeds", async () => {
    const s = await serve([{ status: 429, retryAfter: "3" }, { status: 503 }, { turn: { text: "ok" } }]);
    const turn = await make(s.url, true).complete(request);
    expect(turn.text).toBe("ok");
    // 3 s as asked; then the policy's own backoff (100 ms doubled once, no jitter) for the 503 without one.
    expect(slept).toEqual([3000, 200]);
    expect(s.requests).toHaveLength(3);
  });

  it("gives up after its retries, naming the provider and the status", async () => {
    const s = await serve([{ status: 500 }, { status: 502 }, { status: 529 }]);
    const err = await make(s.url, true).complete(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).message).toMatch(new RegExp(`^${protocol} answered HTTP 529: .*\\(gave up after 3 attempts\\)$`));
  });

  it("does not retry a 400, and quotes the provider's error", async () => {
    const s = await serve([{ status: 400, body: '{"error":{"message":"bad model"}}' }, { turn: { text: "never" } }]);
    const err = (await make(s.url, true).complete(request).catch((e: unknown) => e)) as ProviderError;
    expect(err.status).toBe(400);
    expect(err.message).toBe(`${protocol} answered HTTP 400: {"error":{"message":"bad model"}}`);
    expect(s.remaining()).toBe(1);
  });

  it("refuses a retry-after longer than it waits", async () => {
    const s = await serve([{ status: 429, retryAfter: "3600" }]);
    const err = (await make(s.url, true).complete(request).catch((e: unknown) => e)) as ProviderError;
    expect(err.message).toContain("retry-after 3600 s is longer than the runtime waits, 5 s");
    expect(slept).toEqual([]);
  });

  it("stops a buffered reply at 64 MiB with upstream's message", async () => {
    const s = await serve([{ oversizedBody: 64 * 1024 * 1024 + 1 }]);
    const err = await make(s.url, false).complete(request).catch((e: unknown) => e);
    expect((err as Error).message).toBe(`response body exceeded 64 MiB from ${new URL(s.url).host}`);
    // 64 MiB over loopback took more than vitest's 5 s default on this machine at a load average of 25.
  }, 30_000);

  it("stops a streamed frame at 8 MiB with upstream's message", async () => {
    const s = await serve([{ oversizedFrame: 8 * 1024 * 1024 + 1 }]);
    const err = await make(s.url, true).complete(request).catch((e: unknown) => e);
    expect((err as Error).message).toBe(`stream frame exceeded 8 MiB from ${new URL(s.url).host}`);
  });

  it("fails on a malformed frame, naming the peer", async () => {
    const s = await serve([{ malformedFrame: true }]);
    const err = await make(s.url, true).complete(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as Error).message).toMatch(new RegExp(`^malformed stream frame from ${new URL(s.url).host} \\(${protocol}\\)`));
  });

  it("fails when nothing listens, after its retries", async () => {
    const s = await serve([]);
    const url = s.url;
    await s.close();
    server = undefined;
    const err = (await make(url, true).complete(request).catch((e: unknown) => e)) as ProviderError;
    expect(err.message).toMatch(new RegExp(`^${protocol} at ${new URL(url).host} did not answer \\(ECONNREFUSED\\) \\(gave up after 3 attempts\\)$`));
  });
});
