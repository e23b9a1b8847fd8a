// The stand-in's one request check: why the real service of a protocol would refuse a request (anthropic-request.ts
// for Anthropic's Messages API, responses-api.ts for OpenAI's Chat Completions and Responses APIs), and the 400 that
// service answers with, in its own error body. On for every protocol unless a test turns it off.
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { checkAnthropicRequest } from "./anthropic-request.ts";
import { checkChatCompletionsRequest, checkResponsesRequest } from "./responses-api.ts";

/** The protocols the stand-in speaks. */
export type ModelProtocol = "anthropic" | "openai" | "responses";

/** A request the service would refuse: its protocol, the message as the service words it, the parameter it names. */
export interface RequestRefusal {
  readonly protocol: ModelProtocol;
  readonly message: string;
  readonly param: string | null;
}

/** Whether requests are checked at all (default: yes, each against its protocol's rules). */
export interface RequestCheckOptions {
  readonly checkRequests?: boolean;
}

/** Why the real service would refuse this request, or undefined when it would take it. */
export function checkRequest(protocol: ModelProtocol, body: unknown, headers: IncomingHttpHeaders, options: RequestCheckOptions = {}): RequestRefusal | undefined {
  if (options.checkRequests === false) return undefined;
  if (protocol === "anthropic") {
    const problems = checkAnthropicRequest(body, headers);
    return problems.length === 0 ? undefined : { protocol, message: problems.join("; "), param: null };
  }
  const refusal = protocol === "responses" ? checkResponsesRequest(body) : checkChatCompletionsRequest(body);
  return refusal === undefined ? undefined : { protocol, ...refusal };
}

/** The service's 400 for a refused request: Anthropic's error object, or OpenAI's (naming the parameter). */
export function writeRefusal(res: ServerResponse, refusal: RequestRefusal): void {
  const { message, param } = refusal;
  const body = refusal.protocol === "anthropic"
    ? { type: "error", error: { type: "invalid_request_error", message } }
    : { error: { message, type: "invalid_request_error", param, code: param === null ? null : "invalid_value" } };
  res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify(body));
}
