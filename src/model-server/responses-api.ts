// OpenAI's side of the stand-in: the Responses API (POST /v1/responses, a response object or its SSE events as the
// API documents them) and the request checks for it and for Chat Completions. A request the service would refuse
// gets the service's 400 and error body and takes no script step.
import type { ServerResponse } from "node:http";
import { ChatCompletionsRequest, checkFunctionSchema, INPUT_ITEM_TYPES, refusalOf, ResponsesRequest, type Refusal } from "./openai-schemas.ts";

/** A model turn as the script gives it (the shape the other protocols take too). */
export interface ResponsesTurn {
  readonly text?: string;
  readonly calls?: readonly { readonly name: string; readonly args: Record<string, unknown>; readonly id?: string }[];
}

type ResponsesBody = Extract<ReturnType<typeof ResponsesRequest.safeParse>, { success: true }>["data"];

/** An input item of a type the service does not know: refused naming its index. */
function checkInputItemTypes(body: unknown): Refusal | undefined {
  const items = typeof body === "object" && body !== null && Array.isArray((body as { input?: unknown }).input) ? ((body as { input: unknown[] }).input) : [];
  for (const [i, item] of items.entries()) {
    const type = (item as { type?: unknown } | null)?.type;
    if (type !== undefined && !(INPUT_ITEM_TYPES as readonly unknown[]).includes(type)) {
      return { message: `Invalid value: '${String(type)}'. Supported values are: ${INPUT_ITEM_TYPES.map((t) => `'${t}'`).join(", ")}.`, param: `input[${i}].type` };
    }
  }
  return undefined;
}

/** Each function the request offers (top level or in a namespace), with where it stands; the first bad schema, or the named tool_choice missing. */
function checkResponsesTools(req: ResponsesBody): Refusal | undefined {
  const functions = (req.tools ?? []).flatMap((t, i) => (t.type === "function" ? [{ t, at: `tools[${i}]` }] : t.type === "namespace" ? t.tools.map((f, j) => ({ t: f, at: `tools[${i}].tools[${j}]` })) : []));
  for (const { t, at } of functions) {
    const bad = checkFunctionSchema(t.name, t.parameters, t.strict === true, `${at}.parameters`);
    if (bad) return bad;
  }
  const choice = req.tool_choice;
  if (typeof choice === "object" && choice.type === "function" && !functions.some(({ t }) => t.name === choice.name)) {
    return { message: `Tool choice 'function' with name '${String(choice.name)}' not found in 'tools' parameter.`, param: "tool_choice" };
  }
  return undefined;
}

/** Every call output answers a call made earlier in the same input (unless the conversation continues a stored response). */
function checkCallOutputs(req: ResponsesBody): Refusal | undefined {
  if (!Array.isArray(req.input) || req.previous_response_id) return undefined;
  const called = new Set<string>();
  for (const item of req.input) {
    if (item.type === "function_call" || item.type === "custom_tool_call") called.add(item.call_id as string);
    if ((item.type === "function_call_output" || item.type === "custom_tool_call_output") && !called.has(item.call_id as string)) {
      return { message: `No tool call found for function call output with call_id ${String(item.call_id)}.`, param: "input" };
    }
  }
  return undefined;
}

/** The checks the service makes on a Responses body: its shape, each function's schema, each output's call. */
export function checkResponsesRequest(body: unknown): Refusal | undefined {
  const badType = checkInputItemTypes(body);
  if (badType) return badType;
  const parsed = ResponsesRequest.safeParse(body);
  if (!parsed.success) return refusalOf(parsed.error);
  return checkResponsesTools(parsed.data) ?? checkCallOutputs(parsed.data);
}

type ChatBody = Extract<ReturnType<typeof ChatCompletionsRequest.safeParse>, { success: true }>["data"];

function checkChatTools(req: ChatBody): Refusal | undefined {
  for (const [i, t] of (req.tools ?? []).entries()) {
    if (t.type !== "function") continue;
    const fn = t.function as { name: string; parameters?: Record<string, unknown>; strict?: boolean | null };
    const bad = checkFunctionSchema(fn.name, fn.parameters, fn.strict === true, `tools[${i}].function.parameters`);
    if (bad) return bad;
  }
  return undefined;
}

/** Tool messages answer the calls of the assistant message before them, each call answered before the conversation goes on. */
function checkChatMessages(req: ChatBody): Refusal | undefined {
  let open: string[] = [];
  for (const [i, m] of req.messages.entries()) {
    if (m.role === "tool") {
      if (!open.includes(m.tool_call_id)) return { message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: `messages.[${i}].role` };
      open = open.filter((id) => id !== m.tool_call_id);
      continue;
    }
    if (m.role === "assistant" && (m.content === null || m.content === undefined) && (m.tool_calls ?? []).length === 0) {
      return { message: `Invalid value for 'content': expected a string, got null.`, param: `messages.[${i}].content` };
    }
    if (open.length > 0) return { message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${open.join(", ")}`, param: "messages" };
    if (m.role === "assistant") open = (m.tool_calls ?? []).map((c) => c.id);
  }
  return undefined;
}

/** The checks the service makes on a Chat Completions body: its shape, each function's schema, calls and answers paired. */
export function checkChatCompletionsRequest(body: unknown): Refusal | undefined {
  const parsed = ChatCompletionsRequest.safeParse(body);
  if (!parsed.success) return refusalOf(parsed.error);
  return checkChatTools(parsed.data) ?? checkChatMessages(parsed.data);
}

type OutputItem =
  | { id: string; type: "message"; status: string; role: "assistant"; content: { type: "output_text"; text: string; annotations: never[] }[] }
  | { id: string; type: "function_call"; status: string; call_id: string; name: string; namespace?: string; arguments: string };

/** A scripted name `<namespace>__<tool>` of a tool the request offers in that namespace is called as the model calls it: by both. */
function calledName(name: string, tools: unknown): { name: string; namespace?: string } {
  const spaces = Array.isArray(tools) ? (tools as { type?: string; name?: string; tools?: { name?: string }[] }[]).filter((t) => t.type === "namespace") : [];
  for (const ns of spaces) {
    const rest = name.startsWith(`${ns.name ?? ""}__`) ? name.slice((ns.name ?? "").length + 2) : undefined;
    if (rest !== undefined && (ns.tools ?? []).some((t) => t.name === rest)) return { name: rest, namespace: ns.name as string };
  }
  return { name };
}

function outputOf(turn: ResponsesTurn, n: number, tools: unknown): OutputItem[] {
  const text: OutputItem[] = turn.text ? [{ id: `msg_${n}`, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: turn.text, annotations: [] }] }] : [];
  const calls: OutputItem[] = (turn.calls ?? []).map((c, i) => ({ id: `fc_${n}_${i}`, type: "function_call", status: "completed", call_id: c.id ?? `call_${n}_${i}`, ...calledName(c.name, tools), arguments: JSON.stringify(c.args) }));
  return [...text, ...calls];
}

/** The response object, echoing the request's settings as the service does. */
function responseObject(req: Record<string, unknown>, n: number, status: "in_progress" | "completed", output: OutputItem[]): Record<string, unknown> {
  const echo = (k: string, d: unknown) => req[k] ?? d;
  return {
    id: `resp_${n}`, object: "response", created_at: 1_750_000_000 + n, status, error: null, incomplete_details: null,
    instructions: echo("instructions", null), max_output_tokens: echo("max_output_tokens", null), model: req["model"], output,
    parallel_tool_calls: echo("parallel_tool_calls", true), previous_response_id: echo("previous_response_id", null),
    reasoning: echo("reasoning", { effort: null, summary: null }), store: echo("store", true), temperature: echo("temperature", 1),
    text: echo("text", { format: { type: "text" } }), tool_choice: echo("tool_choice", "auto"), tools: echo("tools", []), top_p: echo("top_p", 1),
    truncation: echo("truncation", "disabled"), metadata: echo("metadata", {}), user: null,
    usage: status === "completed" ? { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 } : null,
  };
}

/** The SSE events of one item: added, its deltas (the text or arguments in two halves), done. */
function itemEvents(item: OutputItem, output_index: number): [string, Record<string, unknown>][] {
  const halves = (s: string) => [s.slice(0, Math.ceil(s.length / 2)), s.slice(Math.ceil(s.length / 2))];
  const item_id = item.id;
  if (item.type === "function_call") {
    return [
      ["response.output_item.added", { output_index, item: { ...item, status: "in_progress", arguments: "" } }],
      ...halves(item.arguments).map((delta): [string, Record<string, unknown>] => ["response.function_call_arguments.delta", { item_id, output_index, delta }]),
      ["response.function_call_arguments.done", { item_id, output_index, name: item.name, arguments: item.arguments }],
      ["response.output_item.done", { output_index, item }],
    ];
  }
  const text = item.content[0]?.text ?? "";
  const part = { type: "output_text", text: "", annotations: [] };
  return [
    ["response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } }],
    ["response.content_part.added", { item_id, output_index, content_index: 0, part }],
    ...halves(text).map((delta): [string, Record<string, unknown>] => ["response.output_text.delta", { item_id, output_index, content_index: 0, delta, logprobs: [] }]),
    ["response.output_text.done", { item_id, output_index, content_index: 0, text, logprobs: [] }],
    ["response.content_part.done", { item_id, output_index, content_index: 0, part: { ...part, text } }],
    ["response.output_item.done", { output_index, item }],
  ];
}

/** Answers one scripted turn: the response object, or (`stream: true`) its events, each numbered. */
export function writeResponsesTurn(turn: ResponsesTurn, req: Record<string, unknown>, n: number, res: ServerResponse): void {
  const output = outputOf(turn, n, req["tools"]);
  if (req["stream"] !== true) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(responseObject(req, n, "completed", output)));
    return;
  }
  const events: [string, Record<string, unknown>][] = [
    ["response.created", { response: responseObject(req, n, "in_progress", []) }],
    ["response.in_progress", { response: responseObject(req, n, "in_progress", []) }],
    ...output.flatMap((item, i) => itemEvents(item, i)),
    ["response.completed", { response: responseObject(req, n, "completed", output) }],
  ];
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  events.forEach(([type, data], sequence_number) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number, ...data })}\n\n`));
  res.end();
}
