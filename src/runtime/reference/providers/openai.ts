// The OpenAI-compatible Chat Completions API (POST <base>/chat/completions), which OpenAI, vLLM, Ollama, LiteLLM
// and most gateways speak: buffered or streamed (SSE, ending with `data: [DONE]`), with function tools.
import { z } from "zod";
import { readSseEvents } from "./capped-read.ts";
import { completeOverHttp, type ProviderOptions } from "./provider-http.ts";
import { ProviderError, type ChatMessage, type ModelProvider, type ModelRequest, type ModelTurn, type StopReason, type ToolCall } from "./types.ts";
import { asToolArgs, parseProviderJson } from "./wire-json.ts";

/** Where OpenAI's API is when no base URL is configured (self-hosted servers set their own, ending in /v1). */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

const Usage = z.object({ prompt_tokens: z.number().optional(), completion_tokens: z.number().optional() }).nullable().optional();
const ReplyToolCall = z.object({ id: z.string().min(1), type: z.literal("function").optional(), function: z.object({ name: z.string().min(1), arguments: z.string() }) });
const CompletionReply = z.object({
  choices: z.array(z.object({
    message: z.object({ content: z.string().nullable().optional(), tool_calls: z.array(ReplyToolCall).nullable().optional() }),
    finish_reason: z.string().nullable().optional(),
  })).min(1),
  usage: Usage,
});
const Chunk = z.object({
  choices: z.array(z.object({
    delta: z.object({
      content: z.string().nullable().optional(),
      tool_calls: z.array(z.object({
        index: z.number().int().min(0),
        id: z.string().optional(),
        function: z.object({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
      })).nullable().optional(),
    }).optional(),
    finish_reason: z.string().nullable().optional(),
  })),
  usage: Usage,
});

function mapStop(reason: string | null | undefined, calls: number): StopReason {
  if (reason === "tool_calls" || reason === "function_call" || (calls > 0 && (reason === "stop" || reason == null))) return "tool_calls";
  if (reason === "stop") return "end";
  if (reason === "length") return "max_tokens";
  return "other";
}

/** The `messages` of a Chat Completions request: the system prompt first. */
export function buildOpenAiMessages(system: string, messages: readonly ChatMessage[]): unknown[] {
  const out: unknown[] = system === "" ? [] : [{ role: "system", content: system }];
  for (const m of messages) {
    if (m.role === "user") out.push({ role: "user", content: m.text });
    else if (m.role === "assistant") {
      out.push({
        role: "assistant",
        content: m.text === "" ? null : m.text,
        ...(m.toolCalls.length === 0 ? {} : { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } })) }),
      });
    } else out.push({ role: "tool", tool_call_id: m.callId, content: m.content });
  }
  return out;
}

/** The request body for one turn. */
export function buildOpenAiBody(req: ModelRequest, stream: boolean): Record<string, unknown> {
  const s = req.sampling;
  return {
    model: req.model,
    messages: buildOpenAiMessages(req.system, req.messages),
    ...(req.tools.length === 0 ? {} : { tools: req.tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.inputSchema } })) }),
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { top_p: s.topP }),
    ...(s.maxTokens === undefined ? {} : { max_tokens: s.maxTokens }),
    ...(s.stop === undefined ? {} : { stop: s.stop }),
    ...(stream ? { stream: true } : {}),
  };
}

function toCalls(provider: string, calls: readonly { id: string; name: string; args: string }[]): ToolCall[] {
  return calls.map((c) => ({ id: c.id, name: c.name, args: asToolArgs(c.args.trim() === "" ? {} : parseProviderJson(c.args, `${provider} tool call '${c.name}' arguments`), provider, c.name) }));
}

type ToolDelta = { index: number; id?: string | undefined; function?: { name?: string | undefined; arguments?: string | undefined } | undefined };

/** Streamed tool calls arrive in pieces keyed by index: the id and name once, the arguments in parts. */
function applyToolDeltas(calls: { id: string; name: string; args: string }[], deltas: readonly ToolDelta[]): void {
  for (const d of deltas) {
    const call = (calls[d.index] ??= { id: "", name: "", args: "" });
    if (d.id) call.id = d.id;
    call.name += d.function?.name ?? "";
    call.args += d.function?.arguments ?? "";
  }
}

/** The turn as the stream has built it so far. */
interface StreamState {
  text: string;
  readonly calls: { id: string; name: string; args: string }[];
  finish: string | null | undefined;
  usage: { inputTokens: number; outputTokens: number } | undefined;
}

/** Folds one chunk into the turn being built. */
function applyChunk(state: StreamState, chunk: z.infer<typeof Chunk>): void {
  if (chunk.usage) state.usage = { inputTokens: chunk.usage.prompt_tokens ?? 0, outputTokens: chunk.usage.completion_tokens ?? 0 };
  const choice = chunk.choices[0];
  if (choice === undefined) return;
  state.text += choice.delta?.content ?? "";
  applyToolDeltas(state.calls, choice.delta?.tool_calls ?? []);
  if (choice.finish_reason) state.finish = choice.finish_reason;
}

async function readStreamed(res: Response, provider: string, host: string): Promise<ModelTurn> {
  const state: StreamState = { text: "", calls: [], finish: undefined, usage: undefined };
  let done = false;
  for await (const sse of readSseEvents(res.body, host)) {
    if (sse.data.trim() === "[DONE]") { done = true; break; }
    const parsed = Chunk.safeParse(parseProviderJson(sse.data, `malformed stream frame from ${host} (${provider})`));
    if (!parsed.success) throw new ProviderError(`malformed stream frame from ${host} (${provider}): ${parsed.error.issues[0]?.message ?? "invalid"}`);
    applyChunk(state, parsed.data);
  }
  const { text, finish, usage } = state;
  if (!done && finish === undefined) throw new ProviderError(`${provider} stream from ${host} ended before a finish_reason or [DONE]`);
  const complete = state.calls.filter((c) => c !== undefined);
  const bad = complete.find((c) => c.id === "" || c.name === "");
  if (bad) throw new ProviderError(`malformed stream frame from ${host} (${provider}): a tool call without an id or a name`);
  return { text, toolCalls: toCalls(provider, complete), stopReason: mapStop(finish, complete.length), ...(usage ? { usage } : {}) };
}

/** A buffered Chat Completions reply as a turn. */
export function parseOpenAiReply(text: string, provider: string, host: string): ModelTurn {
  const parsed = CompletionReply.safeParse(parseProviderJson(text, `${provider} reply from ${host}`));
  if (!parsed.success) throw new ProviderError(`${provider} reply from ${host} does not fit the Chat Completions API: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  const choice = parsed.data.choices[0]!;
  const calls = (choice.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: c.function.arguments }));
  const u = parsed.data.usage;
  return {
    text: choice.message.content ?? "",
    toolCalls: toCalls(provider, calls),
    stopReason: mapStop(choice.finish_reason, calls.length),
    ...(u ? { usage: { inputTokens: u.prompt_tokens ?? 0, outputTokens: u.completion_tokens ?? 0 } } : {}),
  };
}

/** A provider speaking the OpenAI-compatible Chat Completions API. */
export function createOpenAiProvider(opts: ProviderOptions): ModelProvider {
  const name = opts.name ?? "openai";
  const url = `${(opts.baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, "")}/chat/completions`;
  const stream = opts.stream ?? true;
  return {
    name,
    complete: (req, signal) => completeOverHttp(
      { provider: name, url, signal, stream, timeoutMs: opts.timeoutMs, headers: opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}, body: buildOpenAiBody(req, stream) },
      opts.retry,
      { streamed: (res, host) => readStreamed(res, name, host), buffered: (text, host) => parseOpenAiReply(text, name, host) },
    ),
  };
}
