// The request bodies OpenAI documents for POST /v1/responses and POST /v1/chat/completions, as zod schemas, and
// the checks the service makes beyond the shape (a function tool's JSON Schema, a tool output that answers a call
// the request holds). The stand-in refuses what the real service refuses, with its 400 and error body, so a client
// (or our runtime) that sends a request the service would not take fails its test instead of passing here.
import { z } from "zod";

const ToolName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, "string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.");
const JsonObject = z.record(z.string(), z.unknown());
const Reasoning = z.strictObject({ effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(), summary: z.enum(["auto", "concise", "detailed"]).nullish(), generate_summary: z.enum(["auto", "concise", "detailed"]).nullish() });
const Metadata = z.record(z.string().max(64), z.string().max(512));

// --- Responses -------------------------------------------------------------------------------------------------

const InputContent = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("input_text"), text: z.string() }),
  z.looseObject({ type: z.literal("input_image"), detail: z.enum(["low", "high", "auto", "original"]).optional() }),
  z.looseObject({ type: z.literal("input_file") }),
  z.looseObject({ type: z.literal("output_text"), text: z.string() }),
  z.looseObject({ type: z.literal("refusal"), refusal: z.string() }),
]);
const Message = z.strictObject({
  type: z.literal("message").optional(),
  id: z.string().optional(),
  status: z.enum(["in_progress", "completed", "incomplete"]).optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(InputContent)]),
  phase: z.string().nullish(),
});
const FunctionCall = z.strictObject({ type: z.literal("function_call"), id: z.string().optional(), call_id: z.string().min(1), name: z.string().min(1), arguments: z.string(), namespace: z.string().optional(), status: z.enum(["in_progress", "completed", "incomplete"]).optional() });
const ToolOutput = z.union([z.string(), z.array(InputContent)]);
const FunctionCallOutput = z.strictObject({ type: z.literal("function_call_output"), id: z.string().optional(), call_id: z.string().min(1), output: ToolOutput, status: z.enum(["in_progress", "completed", "incomplete"]).optional() });
const ReasoningItem = z.looseObject({ type: z.literal("reasoning"), summary: z.array(z.looseObject({ type: z.literal("summary_text"), text: z.string() })) });
const CustomToolCall = z.looseObject({ type: z.literal("custom_tool_call"), call_id: z.string(), name: z.string(), input: z.string() });
const CustomToolCallOutput = z.looseObject({ type: z.literal("custom_tool_call_output"), call_id: z.string(), output: ToolOutput });
const OtherItem = z.looseObject({ type: z.enum(["item_reference", "web_search_call", "file_search_call", "computer_call", "computer_call_output", "local_shell_call", "local_shell_call_output", "image_generation_call", "code_interpreter_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "mcp_call", "compaction"]) });

/** The `type`s an input item may have (a message may leave it out). */
export const INPUT_ITEM_TYPES = ["message", "function_call", "function_call_output", "reasoning", "custom_tool_call", "custom_tool_call_output", ...OtherItem.shape.type.options] as const;

/** One item of `input`: a message (its `type` may be left out) or one of the item types the API documents. */
const InputItem = z.union([Message, z.discriminatedUnion("type", [FunctionCall, FunctionCallOutput, ReasoningItem, CustomToolCall, CustomToolCallOutput, OtherItem])]);

const ResponsesFunctionTool = z.strictObject({ type: z.literal("function"), name: ToolName, description: z.string().nullish(), parameters: JsonObject.nullish(), strict: z.boolean().nullish(), defer_loading: z.boolean().optional() });
/** A group of function tools under one name (Codex offers each MCP server's tools so); a call names both. */
const NamespaceTool = z.strictObject({ type: z.literal("namespace"), name: ToolName, description: z.string(), tools: z.array(ResponsesFunctionTool).min(1) });
const HostedTool = z.looseObject({ type: z.enum(["web_search", "web_search_preview", "web_search_2025_08_26", "file_search", "code_interpreter", "computer_use_preview", "image_generation", "local_shell", "shell", "apply_patch", "mcp", "custom", "tool_search"]) });
const ResponsesToolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  z.strictObject({ type: z.literal("function"), name: z.string() }),
  z.looseObject({ type: z.enum(["allowed_tools", "file_search", "web_search_preview", "computer_use_preview", "code_interpreter", "image_generation", "mcp", "custom"]) }),
]);

/** The body of POST /v1/responses: an unknown parameter is refused, as the service refuses it. */
export const ResponsesRequest = z.strictObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(InputItem)]).optional(),
  instructions: z.string().nullish(),
  tools: z.array(z.discriminatedUnion("type", [ResponsesFunctionTool, NamespaceTool, HostedTool])).optional(),
  tool_choice: ResponsesToolChoice.optional(),
  parallel_tool_calls: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.strictObject({ include_obfuscation: z.boolean().optional() }).nullish(),
  store: z.boolean().nullish(),
  include: z.array(z.enum(["reasoning.encrypted_content", "message.output_text.logprobs", "file_search_call.results", "web_search_call.results", "web_search_call.action.sources", "message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs"])).nullish(),
  reasoning: Reasoning.nullish(),
  text: z.strictObject({ format: z.looseObject({ type: z.enum(["text", "json_schema", "json_object"]) }).optional(), verbosity: z.enum(["low", "medium", "high"]).nullish() }).nullish(),
  max_output_tokens: z.number().int().min(16).nullish(),
  max_tool_calls: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  metadata: Metadata.nullish(),
  previous_response_id: z.string().nullish(),
  conversation: z.union([z.string(), z.looseObject({ id: z.string() })]).nullish(),
  prompt: JsonObject.nullish(),
  prompt_cache_key: z.string().nullish(),
  prompt_cache_retention: z.enum(["in-memory", "24h"]).nullish(),
  safety_identifier: z.string().nullish(),
  service_tier: z.enum(["auto", "default", "flex", "scale", "priority"]).nullish(),
  truncation: z.enum(["auto", "disabled"]).nullish(),
  background: z.boolean().nullish(),
  user: z.string().nullish(),
  // Not in the reference, but Codex sends it to OpenAI's own endpoint, which takes it (string values only).
  client_metadata: z.record(z.string(), z.string()).optional(),
});
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

// --- Chat Completions ------------------------------------------------------------------------------------------

const ChatToolCall = z.strictObject({ id: z.string().min(1), type: z.literal("function"), function: z.strictObject({ name: z.string(), arguments: z.string() }) });
const ChatContent = z.union([z.string(), z.array(z.looseObject({ type: z.enum(["text", "image_url", "input_audio", "file", "refusal"]) }))]);
const ChatMessage = z.discriminatedUnion("role", [
  z.strictObject({ role: z.enum(["system", "developer"]), content: ChatContent, name: z.string().optional() }),
  z.strictObject({ role: z.literal("user"), content: ChatContent, name: z.string().optional() }),
  z.strictObject({ role: z.literal("assistant"), content: ChatContent.nullish(), name: z.string().optional(), refusal: z.string().nullish(), tool_calls: z.array(ChatToolCall).optional(), audio: JsonObject.nullish() }),
  z.strictObject({ role: z.literal("tool"), content: ChatContent, tool_call_id: z.string().min(1) }),
]);
const ChatFunctionTool = z.strictObject({ type: z.literal("function"), function: z.strictObject({ name: ToolName, description: z.string().optional(), parameters: JsonObject.optional(), strict: z.boolean().nullish() }) });

/** The body of POST /v1/chat/completions. */
export const ChatCompletionsRequest = z.strictObject({
  model: z.string().min(1),
  messages: z.array(ChatMessage).min(1),
  tools: z.array(z.discriminatedUnion("type", [ChatFunctionTool, z.looseObject({ type: z.literal("custom") })])).optional(),
  tool_choice: z.union([z.enum(["none", "auto", "required"]), z.strictObject({ type: z.literal("function"), function: z.strictObject({ name: z.string() }) })]).optional(),
  parallel_tool_calls: z.boolean().optional(),
  stream: z.boolean().nullish(),
  stream_options: z.strictObject({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() }).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  logit_bias: z.record(z.string(), z.number()).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  seed: z.number().int().nullish(),
  response_format: z.looseObject({ type: z.enum(["text", "json_schema", "json_object"]) }).optional(),
  reasoning_effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(),
  verbosity: z.enum(["low", "medium", "high"]).nullish(),
  store: z.boolean().nullish(),
  metadata: Metadata.nullish(),
  service_tier: z.enum(["auto", "default", "flex", "scale", "priority"]).nullish(),
  modalities: z.array(z.enum(["text", "audio"])).nullish(),
  audio: JsonObject.nullish(),
  prediction: JsonObject.nullish(),
  web_search_options: JsonObject.optional(),
  prompt_cache_key: z.string().optional(),
  safety_identifier: z.string().optional(),
  user: z.string().optional(),
});
export type ChatCompletionsRequest = z.infer<typeof ChatCompletionsRequest>;

// --- what the shape does not say --------------------------------------------------------------------------------

/** A refusal as the service words it: the message, and the parameter it names. */
export interface Refusal {
  readonly message: string;
  readonly param: string | null;
}

/** The service's check of a function's `parameters`: a JSON Schema whose top is an object (strict: closed, all required). */
export function checkFunctionSchema(name: string, schema: Record<string, unknown> | null | undefined, strict: boolean, param: string): Refusal | undefined {
  if (schema === null || schema === undefined) return undefined;
  const why = describeSchemaProblem(schema, strict);
  return why === undefined ? undefined : { message: `Invalid schema for function '${name}': ${why}`, param };
}

function describeSchemaProblem(schema: Record<string, unknown>, strict: boolean): string | undefined {
  if (schema["type"] !== "object") return `schema must be a JSON Schema of 'type: "object"', got 'type: "${String(schema["type"] ?? "None")}"'.`;
  const props = schema["properties"] ?? {};
  if (typeof props !== "object" || props === null || Array.isArray(props)) return "'properties' is not of type 'object'.";
  const required = schema["required"] ?? [];
  if (!Array.isArray(required) || !required.every((r) => typeof r === "string")) return "'required' is not an array of strings.";
  const keys = Object.keys(props);
  const unknown = required.find((r) => !keys.includes(r as string));
  if (unknown !== undefined) return `'required' names '${String(unknown)}', which is not in 'properties'.`;
  return strict ? describeStrictProblem(schema, keys, required as string[]) : undefined;
}

function describeStrictProblem(schema: Record<string, unknown>, keys: readonly string[], required: readonly string[]): string | undefined {
  if (schema["additionalProperties"] !== false) return "In context=(), 'additionalProperties' is required to be supplied and to be false.";
  const missing = keys.find((k) => !required.includes(k));
  return missing === undefined ? undefined : `In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`;
}

/** A key path as the services and our scripts name it: `tools[0].name`, `steps[1].calls[0]` (no leading dot). */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, p) => (typeof p === "number" ? `${acc}[${p}]` : acc === "" ? String(p) : `${acc}.${String(p)}`), "");
}

/** Names the first zod issue the way the service names a bad parameter (`tools[0].name`) and words it. */
export function refusalOf(error: z.ZodError): Refusal {
  const issue = error.issues[0];
  const path = formatKeyPath(issue?.path ?? []);
  if (issue === undefined) return { message: `Invalid '${path}': invalid`, param: path };
  return refusalOfIssue(issue, path);
}

function refusalOfIssue(issue: z.core.$ZodIssue, path: string): Refusal {
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "";
    const param = path === "" ? key : `${path}.${key}`;
    return { message: `Unknown parameter: '${param}'.`, param };
  }
  if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) return { message: `Missing required parameter: '${path}'.`, param: path };
  const expected = /^Invalid discriminator value\. Expected (.*)$/.exec(issue.message)?.[1];
  if (expected !== undefined) return { message: `Invalid value for '${path}'. Supported values are: ${expected.split(" | ").join(", ")}.`, param: path };
  if (issue.code === "invalid_union" || issue.code === "invalid_value") return { message: `Invalid value for '${path}': ${issue.message}`, param: path };
  return { message: `Invalid '${path}': ${issue.message}`, param: path };
}
