// Anthropic's Messages API (POST /v1/messages), buffered or streamed (SSE), with tool use. Replies are parsed
// with zod: a reply that does not fit is a failure naming the provider, never a guess.
import { z } from "zod";
import { readSseEvents } from "./capped-read.ts";
import { completeOverHttp, type ProviderOptions } from "./provider-http.ts";
import { asToolArgs, parseProviderJson } from "./wire-json.ts";
import { ProviderError, type ChatMessage, type ModelProvider, type ModelRequest, type ModelTurn, type StopReason, type ToolCall } from "./types.ts";

/** The API version header every request carries. */
export const ANTHROPIC_VERSION = "2023-06-01";
/** Where Anthropic's API is when no base URL is configured. */
export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
/** `max_tokens` is required by the API; this is used when the blueprint sets none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 8192;

const TextBlock = z.object({ type: z.literal("text"), text: z.string() });
const ToolUseBlock = z.object({ type: z.literal("tool_use"), id: z.string().min(1), name: z.string().min(1), input: z.unknown() });
const OtherBlock = z.looseObject({ type: z.string() });
type Block = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: unknown } | { type: "other" };

/** A content block, strict for the two kinds the runtime uses (a tool_use without an id is malformed, not "other"). */
function parseBlock(raw: z.infer<typeof OtherBlock>, what: string): Block {
  const schema = raw.type === "text" ? TextBlock : raw.type === "tool_use" ? ToolUseBlock : undefined;
  if (schema === undefined) return { type: "other" };
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ProviderError(`${what}: a ${raw.type} block that does not fit: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return parsed.data as Block;
}
const Usage = z.object({ input_tokens: z.number().optional(), output_tokens: z.number().optional() }).optional();
const MessageReply = z.object({
  content: z.array(OtherBlock),
  stop_reason: z.string().nullable().optional(),
  usage: Usage,
});
const StreamEvent = z.discriminatedUnion("type", [
  z.object({ type: z.literal("message_start"), message: z.object({ usage: Usage }) }),
  z.object({ type: z.literal("content_block_start"), index: z.number().int().min(0), content_block: OtherBlock }),
  z.object({ type: z.literal("content_block_delta"), index: z.number().int().min(0), delta: z.union([
    z.object({ type: z.literal("text_delta"), text: z.string() }),
    z.object({ type: z.literal("input_json_delta"), partial_json: z.string() }),
    z.object({ type: z.string() }),
  ]) }),
  z.object({ type: z.literal("content_block_stop"), index: z.number().int().min(0) }),
  z.object({ type: z.literal("message_delta"), delta: z.object({ stop_reason: z.string().nullable().optional() }), usage: Usage }),
  z.object({ type: z.literal("message_stop") }),
  z.object({ type: z.literal("ping") }),
  z.object({ type: z.literal("error"), error: z.object({ type: z.string(), message: z.string() }) }),
]);

function mapStop(reason: string | null | undefined): StopReason {
  if (reason === "tool_use") return "tool_calls";
  if (reason === "end_turn" || reason === "stop_sequence") return "end";
  if (reason === "max_tokens") return "max_tokens";
  return "other";
}

/** The Messages API's `messages`: tool results of one turn go together in one user message, as the API requires. */
export function buildAnthropicMessages(messages: readonly ChatMessage[]): unknown[] {
  const out: { role: string; content: unknown[] }[] = [];
  for (const m of messages) {
    if (m.role === "user") out.push({ role: "user", content: [{ type: "text", text: m.text }] });
    else if (m.role === "assistant") {
      const content: unknown[] = m.text === "" ? [] : [{ type: "text", text: m.text }];
      for (const c of m.toolCalls) content.push({ type: "tool_use", id: c.id, name: c.name, input: c.args });
      out.push({ role: "assistant", content });
    } else {
      const block = { type: "tool_result", tool_use_id: m.callId, content: m.content, ...(m.isError ? { is_error: true } : {}) };
      const last = out.at(-1);
      if (last?.role === "user" && (last.content[0] as { type?: string } | undefined)?.type === "tool_result") last.content.push(block);
      else out.push({ role: "user", content: [block] });
    }
  }
  return out;
}

/** The request body for one turn. */
export function buildAnthropicBody(req: ModelRequest, stream: boolean): Record<string, unknown> {
  const s = req.sampling;
  return {
    model: req.model,
    max_tokens: s.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    ...(req.system === "" ? {} : { system: req.system }),
    messages: buildAnthropicMessages(req.messages),
    ...(req.tools.length === 0 ? {} : { tools: req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })) }),
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { top_p: s.topP }),
    ...(s.topK === undefined ? {} : { top_k: s.topK }),
    ...(s.stop === undefined ? {} : { stop_sequences: s.stop }),
    ...(stream ? { stream: true } : {}),
  };
}

type StreamBlock = { kind: "text"; text: string } | { kind: "tool"; id: string; name: string; json: string };
interface StreamState { blocks: Map<number, StreamBlock>; stop: string | null | undefined; usage: { inputTokens: number; outputTokens: number }; stopped: boolean }

type StreamEventOf<T extends string> = Extract<z.infer<typeof StreamEvent>, { type: T }>;

/** Folds one stream event into the turn being built. */
function applyStreamEvent(state: StreamState, e: z.infer<typeof StreamEvent>, provider: string, host: string): void {
  switch (e.type) {
    case "error": throw new ProviderError(`${provider} stream error: ${e.error.type}: ${e.error.message}`);
    case "message_start":
      state.usage = { inputTokens: e.message.usage?.input_tokens ?? 0, outputTokens: e.message.usage?.output_tokens ?? 0 };
      return;
    case "content_block_start": return startBlock(state, e, `malformed stream frame from ${host} (${provider})`);
    case "content_block_delta": return extendBlock(state, e);
    case "message_delta":
      state.stop = e.delta.stop_reason;
      state.usage = { ...state.usage, outputTokens: e.usage?.output_tokens ?? state.usage.outputTokens };
      return;
    case "message_stop":
      state.stopped = true;
      return;
    case "content_block_stop":
    case "ping":
      return;
    default: {
      const unknown: never = e;
      throw new ProviderError(`${provider} stream from ${host}: unknown event ${JSON.stringify(unknown)}`);
    }
  }
}

/** A content block begins: text and tool_use blocks are kept, any other kind is not ours to read. */
function startBlock(state: StreamState, e: StreamEventOf<"content_block_start">, what: string): void {
  const b = parseBlock(e.content_block, what);
  if (b.type === "text") state.blocks.set(e.index, { kind: "text", text: b.text });
  else if (b.type === "tool_use") state.blocks.set(e.index, { kind: "tool", id: b.id, name: b.name, json: "" });
}

/** More of a block: text to a text block, argument JSON to a tool_use block. */
function extendBlock(state: StreamState, e: StreamEventOf<"content_block_delta">): void {
  const block = state.blocks.get(e.index);
  const d = e.delta as { type: string; text?: string; partial_json?: string };
  if (block?.kind === "text" && d.type === "text_delta") block.text += d.text ?? "";
  if (block?.kind === "tool" && d.type === "input_json_delta") block.json += d.partial_json ?? "";
}

async function readStreamed(res: Response, provider: string, host: string): Promise<ModelTurn> {
  const state: StreamState = { blocks: new Map(), stop: undefined, usage: { inputTokens: 0, outputTokens: 0 }, stopped: false };
  for await (const sse of readSseEvents(res.body, host)) {
    const parsed = StreamEvent.safeParse(parseProviderJson(sse.data, `malformed stream frame from ${host} (${provider})`));
    if (!parsed.success) throw new ProviderError(`malformed stream frame from ${host} (${provider}): ${parsed.error.issues[0]?.message ?? "invalid"}`);
    applyStreamEvent(state, parsed.data, provider, host);
    if (state.stopped) break;
  }
  if (!state.stopped) throw new ProviderError(`${provider} stream from ${host} ended before message_stop`);
  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const [, b] of [...state.blocks].sort(([x], [y]) => x - y)) {
    if (b.kind === "text") text += b.text;
    else toolCalls.push({ id: b.id, name: b.name, args: asToolArgs(b.json.trim() === "" ? {} : parseProviderJson(b.json, `${provider} tool_use '${b.name}' arguments`), provider, b.name) });
  }
  return { text, toolCalls, stopReason: mapStop(state.stop), usage: state.usage };
}

/** A reply of the buffered Messages API as a turn. */
export function parseAnthropicReply(text: string, provider: string, host: string): ModelTurn {
  const parsed = MessageReply.safeParse(parseProviderJson(text, `${provider} reply from ${host}`));
  if (!parsed.success) throw new ProviderError(`${provider} reply from ${host} does not fit the Messages API: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  const blocks = parsed.data.content.map((b) => parseBlock(b, `${provider} reply from ${host}`));
  const u = parsed.data.usage;
  return {
    text: blocks.flatMap((b) => (b.type === "text" ? [b.text] : [])).join(""),
    toolCalls: blocks.flatMap((b) => (b.type === "tool_use" ? [{ id: b.id, name: b.name, args: asToolArgs(b.input, provider, b.name) }] : [])),
    stopReason: mapStop(parsed.data.stop_reason),
    usage: { inputTokens: u?.input_tokens ?? 0, outputTokens: u?.output_tokens ?? 0 },
  };
}

/** A provider speaking Anthropic's Messages API. */
export function createAnthropicProvider(opts: ProviderOptions): ModelProvider {
  const name = opts.name ?? "anthropic";
  const url = `${(opts.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, "")}/v1/messages`;
  const stream = opts.stream ?? true;
  return {
    name,
    complete: (req, signal) => completeOverHttp(
      { provider: name, url, signal, stream, timeoutMs: opts.timeoutMs, headers: { ...(opts.apiKey ? { "x-api-key": opts.apiKey } : {}), "anthropic-version": ANTHROPIC_VERSION }, body: buildAnthropicBody(req, stream) },
      opts.retry,
      { streamed: (res, host) => readStreamed(res, name, host), buffered: (text, host) => parseAnthropicReply(text, name, host) },
    ),
  };
}
