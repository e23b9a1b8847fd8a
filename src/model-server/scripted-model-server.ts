// The one stand-in the tests allow: a local HTTP server speaking Anthropic's Messages API (POST /v1/messages) and
// the OpenAI-compatible Chat Completions API (POST .../chat/completions) and OpenAI's Responses API (POST
// .../responses, in responses-api.ts), buffered or streamed (SSE), replying from a script the test writes. Each
// request takes the next step of the script; every request is recorded. A request the service would refuse
// (request-check.ts, every protocol) is answered with its 400 (recorded with `refused`) and takes no step.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { checkRequest, writeRefusal, type ModelProtocol, type RequestCheckOptions } from "./request-check.ts";
import { writeResponsesTurn } from "./responses-api.ts";

/** One scripted tool call; the id is generated when not given. */
export interface ScriptedCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly id?: string;
}

/**
 * One step: a model turn, an HTTP error, or one of the hostile replies. A turn with `after` is answered only once
 * that promise settles (a model that takes its time, so the test can act in between).
 */
export type ScriptStep =
  | { readonly turn: { readonly text?: string; readonly calls?: readonly ScriptedCall[] }; readonly after?: Promise<unknown> }
  | { readonly status: number; readonly retryAfter?: string; readonly body?: string }
  /** A buffered reply of this many bytes (a JSON string that never ends). */
  | { readonly oversizedBody: number }
  /** A streamed reply whose first frame is this many bytes with no frame end. */
  | { readonly oversizedFrame: number }
  /** A streamed reply whose second frame is not JSON. */
  | { readonly malformedFrame: true };

/** A request the server got. */
export interface RecordedRequest {
  readonly protocol: ModelProtocol;
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Record<string, unknown>;
  /** Set when the request failed the provider's documented request schema: the 400's message. */
  readonly refused?: string;
}

/**
 * How the server behaves beyond its script: a request the real service would refuse (request-check.ts) is answered
 * with that service's 400 unless `checkRequests` is false.
 */
export type ScriptedServerOptions = RequestCheckOptions;

/** Where a server's steps come from: a fixed script (the tests'), or a source that decides per request (the CLI's). */
export interface StepSource {
  /** The step for this request; undefined when there is none left. */
  next(request: { readonly protocol: ModelProtocol; readonly body: Record<string, unknown> }): ScriptStep | undefined;
  /** Steps not yet used (Infinity: it never runs out). */
  remaining(): number;
}

/** A fixed script, one step per request, in order. */
export function scriptSource(script: readonly ScriptStep[]): StepSource {
  const steps = [...script];
  return { next: () => steps.shift(), remaining: () => steps.length };
}

/** A running server. */
export interface ScriptedModelServer {
  /** `http://host:port`: Anthropic's base URL; OpenAI's is `${url}/v1`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Steps not yet used. */
  remaining(): number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
}

function sse(res: ServerResponse, frames: readonly string[]): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const f of frames) res.write(f);
  res.end();
}

function anthropicTurn(turn: { text?: string; calls?: readonly ScriptedCall[] }, n: number, stream: boolean, res: ServerResponse): void {
  const calls = (turn.calls ?? []).map((c, i) => ({ ...c, id: c.id ?? `toolu_${n}_${i}` }));
  const stop = calls.length > 0 ? "tool_use" : "end_turn";
  type Block = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };
  const content: Block[] = [...(turn.text ? [{ type: "text" as const, text: turn.text }] : []), ...calls.map((c) => ({ type: "tool_use" as const, id: c.id, name: c.name, input: c.args }))];
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ id: `msg_${n}`, type: "message", role: "assistant", content, stop_reason: stop, usage: { input_tokens: 10, output_tokens: 5 } }));
    return;
  }
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const frames = [ev("message_start", { message: { id: `msg_${n}`, usage: { input_tokens: 10, output_tokens: 0 } } }), ": keep-alive comment\n\n", ev("ping", {})];
  content.forEach((b, index) => {
    if (b.type === "text") {
      const text = b.text;
      const half = Math.ceil(text.length / 2);
      frames.push(ev("content_block_start", { index, content_block: { type: "text", text: "" } }));
      for (const part of [text.slice(0, half), text.slice(half)]) frames.push(ev("content_block_delta", { index, delta: { type: "text_delta", text: part } }));
    } else {
      const json = JSON.stringify(b.input);
      const half = Math.ceil(json.length / 2);
      frames.push(ev("content_block_start", { index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } }));
      for (const part of [json.slice(0, half), json.slice(half)]) frames.push(ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: part } }));
    }
    frames.push(ev("content_block_stop", { index }));
  });
  frames.push(ev("message_delta", { delta: { stop_reason: stop }, usage: { output_tokens: 5 } }), ev("message_stop", {}));
  sse(res, frames);
}

function openAiTurn(turn: { text?: string; calls?: readonly ScriptedCall[] }, n: number, stream: boolean, res: ServerResponse): void {
  const calls = (turn.calls ?? []).map((c, i) => ({ id: c.id ?? `call_${n}_${i}`, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }));
  const finish = calls.length > 0 ? "tool_calls" : "stop";
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ id: `chatcmpl-${n}`, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: turn.text ?? null, ...(calls.length ? { tool_calls: calls } : {}) }, finish_reason: finish }], usage: { prompt_tokens: 10, completion_tokens: 5 } }));
    return;
  }
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => `data: ${JSON.stringify({ id: `chatcmpl-${n}`, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  const frames = [chunk({ role: "assistant" })];
  if (turn.text) {
    const half = Math.ceil(turn.text.length / 2);
    frames.push(chunk({ content: turn.text.slice(0, half) }), chunk({ content: turn.text.slice(half) }));
  }
  calls.forEach((c, index) => {
    const half = Math.ceil(c.function.arguments.length / 2);
    frames.push(chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.function.name, arguments: c.function.arguments.slice(0, half) } }] }));
    frames.push(chunk({ tool_calls: [{ index, function: { arguments: c.function.arguments.slice(half) } }] }));
  });
  frames.push(chunk({}, finish), "data: [DONE]\n\n");
  sse(res, frames);
}

function writeHostile(step: Exclude<ScriptStep, { turn: unknown } | { status: number }>, res: ServerResponse): void {
  res.on("error", () => undefined);
  if ("oversizedBody" in step) {
    res.writeHead(200, { "content-type": "application/json" });
    const piece = Buffer.alloc(1024 * 1024, "a");
    let left = step.oversizedBody;
    res.write('{"content":"');
    left -= 12;
    const pump = () => {
      while (left > 0) {
        const part = left >= piece.length ? piece : piece.subarray(0, left);
        left -= part.length;
        if (!res.write(part)) return void res.once("drain", pump);
      }
      res.end();
    };
    pump();
    return;
  }
  if ("oversizedFrame" in step) {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: ");
    res.end(Buffer.alloc(step.oversizedFrame, "x"));
    return;
  }
  sse(res, ['event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1}}}\n\n', "data: {not json\n\n", "data: [DONE]\n\n"]);
}

/** The protocol a request path speaks, or undefined (a 404). */
function routeOf(path: string): ModelProtocol | undefined {
  if (path.endsWith("/v1/messages")) return "anthropic";
  if (path.endsWith("/chat/completions")) return "openai";
  return path.endsWith("/responses") ? "responses" : undefined;
}

/** Answers one request with its step: a turn in the request's protocol, a scripted error, a hostile reply, or a 500 when none is left. */
async function answerStep(step: ScriptStep | undefined, request: { protocol: ModelProtocol; body: Record<string, unknown>; n: number }, res: ServerResponse): Promise<void> {
  const { protocol, body, n } = request;
  if (step === undefined) {
    res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "the script has no step left for this request" } }));
    return;
  }
  if ("status" in step) {
    res.writeHead(step.status, { "content-type": "application/json", ...(step.retryAfter === undefined ? {} : { "retry-after": step.retryAfter }) });
    res.end(step.body ?? JSON.stringify({ type: "error", error: { type: "rate_limit_error", message: `scripted ${step.status}` } }));
    return;
  }
  if (!("turn" in step)) return void writeHostile(step, res);
  if (step.after) await step.after.catch(() => undefined);
  const stream = body["stream"] === true;
  if (protocol === "anthropic") anthropicTurn(step.turn, n, stream, res);
  else if (protocol === "responses") writeResponsesTurn(step.turn, body, n, res);
  else openAiTurn(step.turn, n, stream, res);
}

/**
 * Starts a server on `host` (default loopback) replying from `script` (a fixed list: one step per request, in order)
 * or a step source; `options.port` picks the port (default: any free one).
 */
export async function startScriptedModelServer(script: readonly ScriptStep[] | StepSource, host = "127.0.0.1", options: ScriptedServerOptions & { readonly port?: number; readonly onRequest?: (r: RecordedRequest) => void } = {}): Promise<ScriptedModelServer> {
  const steps = Array.isArray(script) ? scriptSource(script) : script as StepSource;
  const requests: RecordedRequest[] = [];
  let n = 0;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? "").split("?")[0] ?? "";
      const protocol = routeOf(path);
      if (req.method !== "POST" || protocol === undefined) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no route ${req.method} ${path}` } }));
        return;
      }
      const body = await readBody(req);
      const refusal = checkRequest(protocol, body, req.headers, options);
      const recorded: RecordedRequest = { protocol, path, headers: req.headers, body, ...(refusal === undefined ? {} : { refused: refusal.message }) };
      requests.push(recorded);
      options.onRequest?.(recorded);
      if (refusal) return void writeRefusal(res, refusal);
      n++;
      await answerStep(steps.next({ protocol, body }), { protocol, body, n }, res);
    })().catch((err: unknown) => res.writeHead(500).end(String(err)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    requests,
    remaining: () => steps.remaining(),
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
