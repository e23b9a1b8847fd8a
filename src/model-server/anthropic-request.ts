// What Anthropic's Messages API (POST /v1/messages, anthropic-version 2023-06-01) refuses, checked on each request
// the scripted model server gets when asked to: so a client that sends what the real service would answer with
// 400 invalid_request_error fails the test instead of passing against a lenient stand-in. Written from the API
// reference (request body, content blocks, tool use, prompt caching); only what the clients under test send.
import { z } from "zod";

const CacheControl = z.strictObject({ type: z.literal("ephemeral"), ttl: z.enum(["5m", "1h"]).optional() });
const Text = z.strictObject({ type: z.literal("text"), text: z.string().min(1), cache_control: CacheControl.optional(), citations: z.array(z.unknown()).optional() });
const ToolUse = z.strictObject({
  type: z.literal("tool_use"), id: z.string().regex(/^[a-zA-Z0-9_-]+$/), name: z.string().min(1), input: z.record(z.string(), z.unknown()), cache_control: CacheControl.optional(),
});
const ToolResult = z.strictObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(Text)]).optional(),
  is_error: z.boolean().optional(),
  cache_control: CacheControl.optional(),
});
const Thinking = z.strictObject({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() });
const Block = z.discriminatedUnion("type", [Text, ToolUse, ToolResult, Thinking]);
const Message = z.strictObject({ role: z.enum(["user", "assistant"]), content: z.union([z.string().min(1), z.array(Block).min(1)]) });
const Tool = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, "a tool name is 1-128 characters of a-z A-Z 0-9 _ -"),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal("object") }),
  cache_control: CacheControl.optional(),
  strict: z.boolean().optional(),
});

// How thinking shows in the reply (the SDK types it `"summarized" | "omitted" | null`).
const ThinkingDisplay = z.enum(["summarized", "omitted"]).nullable().optional();

/** The request body: unknown top-level keys are refused, as the service does ("Extra inputs are not permitted"). */
const MessagesRequest = z.strictObject({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z.array(Message).min(1),
  system: z.union([z.string(), z.array(Text)]).optional(),
  tools: z.array(Tool).optional(),
  tool_choice: z.looseObject({ type: z.enum(["auto", "any", "tool", "none"]) }).optional(),
  metadata: z.strictObject({ user_id: z.string().max(512).optional() }).optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  thinking: z.union([
    // `display` on enabled and adaptive alike, as the SDK's ThinkingConfigEnabled / ThinkingConfigAdaptive declare it.
    z.strictObject({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1024), display: ThinkingDisplay }),
    z.strictObject({ type: z.literal("disabled") }),
    z.strictObject({ type: z.literal("adaptive"), display: ThinkingDisplay }),
  ]).optional(),
  // Beta features Claude Code asks for in its anthropic-beta header (context-management, effort).
  context_management: z.looseObject({ edits: z.array(z.looseObject({ type: z.string() })) }).optional(),
  output_config: z.looseObject({ effort: z.enum(["low", "medium", "high", "xhigh", "max"]).optional() }).optional(),
  service_tier: z.enum(["auto", "standard_only"]).optional(),
});

type Body = z.infer<typeof MessagesRequest>;

/** The conversation rules the schema cannot say: who speaks first, tool results answering the turn before. */
function checkConversation(body: Body): string[] {
  const problems: string[] = [];
  const blocks = (m: Body["messages"][number]) => (typeof m.content === "string" ? [] : m.content);
  if (body.messages[0]!.role !== "user") problems.push("messages: the first message must be the user's");
  body.messages.forEach((m, i) => {
    const calls = blocks(m).filter((b) => b.type === "tool_use").map((b) => (b as { id: string }).id);
    const results = blocks(m).filter((b) => b.type === "tool_result").map((b) => (b as { tool_use_id: string }).tool_use_id);
    if (m.role === "assistant" && results.length > 0) problems.push(`messages.${i}: tool_result blocks belong in a user message`);
    if (m.role === "user" && calls.length > 0) problems.push(`messages.${i}: tool_use blocks belong in an assistant message`);
    if (m.role !== "assistant" || calls.length === 0) return;
    const next = body.messages[i + 1];
    const answered = next === undefined ? [] : blocks(next).filter((b) => b.type === "tool_result").map((b) => (b as { tool_use_id: string }).tool_use_id);
    const missing = calls.filter((id) => !answered.includes(id));
    if (next !== undefined && missing.length > 0) problems.push(`messages.${i + 1}: tool_use ids without a tool_result right after: ${missing.join(", ")}`);
  });
  return problems;
}

/** Every cache_control marker of the request: the service takes at most four. */
function countCacheMarkers(body: Body): number {
  const marked = (x: unknown) => (typeof x === "object" && x !== null && "cache_control" in x ? 1 : 0);
  const system = typeof body.system === "string" || body.system === undefined ? 0 : body.system.reduce((n, b) => n + marked(b), 0);
  const messages = body.messages.reduce((n, m) => n + (typeof m.content === "string" ? 0 : m.content.reduce((k, b) => k + marked(b), 0)), 0);
  return system + messages + (body.tools ?? []).reduce((n, t) => n + marked(t), 0);
}

/** Why the real Messages API would refuse this request (empty: it would take it). */
export function checkAnthropicRequest(body: unknown, headers: Record<string, string | string[] | undefined>): string[] {
  const problems: string[] = [];
  if (headers["anthropic-version"] !== "2023-06-01") problems.push(`header anthropic-version: '${String(headers["anthropic-version"])}'`);
  if (headers["x-api-key"] === undefined && headers["authorization"] === undefined) problems.push("no x-api-key or authorization header");
  const parsed = MessagesRequest.safeParse(body);
  if (!parsed.success) return [...problems, ...parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`)];
  const names = (parsed.data.tools ?? []).map((t) => t.name);
  if (new Set(names).size !== names.length) problems.push("tools: tool names must be unique");
  const markers = countCacheMarkers(parsed.data);
  if (markers > 4) problems.push(`a maximum of 4 blocks with cache_control may be provided; found ${markers}`);
  const thinking = parsed.data.thinking;
  if (thinking?.type === "enabled" && thinking.budget_tokens >= parsed.data.max_tokens) problems.push("max_tokens: must be greater than thinking.budget_tokens");
  return [...problems, ...checkConversation(parsed.data)];
}
