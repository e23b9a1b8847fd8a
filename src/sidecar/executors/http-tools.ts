// The executor of the outbound built-ins (`web_fetch`, `http_get`, `http_post`; executor kind `http` in
// api/tools.ts), run by the sidecar once the call was allowed. The policy decided on the URL's host; this keeps the
// call there: a redirect is followed only to the same host (and never from https down to http), at most
// MAX_REDIRECTS times, and a redirect elsewhere comes back as the redirect itself, never as the other host's
// content. Local addresses are refused unless the policy allows them (address-guard.ts). One deadline covers the
// whole call; past it nothing read is given back. The body is capped as upstream caps its script HTTP reads (seed:
// a declared length over 900 KB is refused before reading, a body without one is cut at 900 KB), binary content
// is refused, and the status and headers come first in a bounded form. The result is labelled by the tool's
// classification (public: content from the web is untrusted).
import type { HttpToolOutcomeLabel } from "../../metrics/sidecar-metrics.ts";
import { buildRefusalMessage } from "../../api/sidecar-contract.ts";
import { parseOutboundUrl } from "../../api/outbound-url.ts";
import type { ExecutionOutcome } from "./execution-outcome.ts";
import { buildBodyText, buildHeadText, buildOversizeText, isRedirect } from "./http-result-text.ts";
import { readCappedBody, sendHop, type OutboundHop, type ResponseHead } from "./outbound-request.ts";

/** The most redirects one call follows (each on the call's own host). */
export const MAX_REDIRECTS = 5;

/** What the policy says about the HTTP tools (the run policy's `outbound`). */
export interface OutboundSettings {
  readonly allowLocalNetwork: boolean;
  readonly timeoutSeconds: number;
}

/** One allowed call of an HTTP tool, its arguments as parsed (the url normalised). */
export interface HttpToolCall {
  readonly tool: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly outbound: OutboundSettings;
}

/** How a call ended, for the metric. */
export type HttpToolOutcome = HttpToolOutcomeLabel;

/** An executed call: the executor's outcome and the metric's. */
export interface HttpToolResult {
  readonly outcome: ExecutionOutcome;
  readonly metric: HttpToolOutcome;
}

function done(result: string, isError: boolean, metric: HttpToolOutcome): HttpToolResult {
  return { outcome: { kind: "done", result, isError }, metric };
}

/** The first request of a call, from its parsed arguments. */
export function buildFirstHop(tool: string, args: Readonly<Record<string, unknown>>): OutboundHop {
  const headers = { ...((args["headers"] as Record<string, string> | undefined) ?? {}) };
  if (tool !== "http_post") return { method: "GET", url: String(args["url"]), headers };
  const body = String(args["body"]);
  if (!Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["content-type"] = isJson(body) ? "application/json" : "text/plain; charset=utf-8";
  return { method: "POST", url: String(args["url"]), headers, body };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Where a redirect may lead: the next request, or why it is not followed. */
export function decideRedirect(from: OutboundHop, head: ResponseHead): { next: OutboundHop } | { refused: string } {
  if (head.location === undefined) return { refused: "it names no Location" };
  const target = URL.parse(head.location, from.url);
  const parsed = target === null ? undefined : parseOutboundUrl(target.href);
  if (parsed === undefined || !parsed.ok) return { refused: `its Location is not a URL this tool fetches${parsed === undefined ? "" : ` (${parsed.reason})`}` };
  const host = new URL(from.url).hostname;
  if (parsed.host !== host) return { refused: `it leads to '${parsed.host}', not to '${host}', the host this call was allowed for; call the tool with that URL to fetch it (it is decided as a call of its own)` };
  if (from.url.startsWith("https:") && parsed.href.startsWith("http:")) return { refused: "it leads from https down to plain http" };
  // 303, and 301/302 after a POST, turn into a GET without the body (what browsers do); 307/308 keep both.
  const asGet = head.status === 303 || ((head.status === 301 || head.status === 302) && from.method === "POST");
  if (!asGet) return { next: { ...from, url: parsed.href } };
  const headers = Object.fromEntries(Object.entries(from.headers).filter(([h]) => h.toLowerCase() !== "content-type"));
  return { next: { method: "GET", url: parsed.href, headers } };
}

/** Reads the final response's body and builds the text for the model. */
async function finishResponse(head: ResponseHead, signal: AbortSignal, call: HttpToolCall): Promise<HttpToolResult> {
  const top = buildHeadText(head);
  const over = buildOversizeText(head);
  if (over !== undefined) {
    head.message.destroy();
    return done(`${top}\n\n${over}`, true, "oversized");
  }
  const body = await readCappedBody(head.message, OUTBOUND_BODY_CAP, signal);
  if (body === "timed-out") return timedOut(call);
  if ("failed" in body) return done(`${top}\n\n[error] the response broke off (${body.failed}); nothing of it is given back`, true, "failed");
  const text = buildBodyText(head.contentType, body);
  const isError = head.status >= 400 || text.kind === "not_text";
  const metric: HttpToolOutcome = text.kind === "not_text" ? "not_text" : body.truncated ? "truncated" : head.status >= 400 ? "http_error" : "ok";
  return done(`${top}\n\n${text.text}`, isError, metric);
}

/** The cap on a body given back (upstream's script HTTP output cap). */
export const OUTBOUND_BODY_CAP = 900_000;

function timedOut(call: HttpToolCall): HttpToolResult {
  const host = new URL(String(call.args["url"])).hostname;
  return done(`[error] Tool '${call.tool}' to '${host}' did not finish within ${call.outbound.timeoutSeconds} s; it was stopped and nothing it read is given back.`, true, "timed_out");
}

async function follow(call: HttpToolCall, signal: AbortSignal): Promise<HttpToolResult> {
  let hop = buildFirstHop(call.tool, call.args);
  for (let redirects = 0; ; redirects++) {
    const sent = await sendHop(hop, { allowLocalNetwork: call.outbound.allowLocalNetwork, signal });
    if (sent.kind === "timed-out") return timedOut(call);
    if (sent.kind === "failed") return done(`[error] Tool '${call.tool}' could not reach '${new URL(hop.url).hostname}': ${sent.message}`, true, "failed");
    if (sent.kind === "local") {
      return { outcome: { kind: "refused", code: "local-address", message: buildRefusalMessage("local-address", call.tool, sent.error.host, sent.error.address) }, metric: "local_refused" };
    }
    const { head } = sent;
    if (!isRedirect(head.status)) return finishResponse(head, signal, call);
    head.message.destroy();
    const where = decideRedirect(hop, head);
    if ("refused" in where) return done(`${buildHeadText(head)}\n\n[redirect not followed] ${where.refused}.`, true, "redirect_refused");
    if (redirects >= MAX_REDIRECTS) return done(`${buildHeadText(head)}\n\n[redirect not followed] more than ${MAX_REDIRECTS} redirects.`, true, "redirect_refused");
    hop = where.next;
  }
}

/** Runs one allowed call of an HTTP tool under the policy's deadline. */
export async function runHttpTool(call: HttpToolCall): Promise<HttpToolResult> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), call.outbound.timeoutSeconds * 1000);
  try {
    return await follow(call, controller.signal);
  } finally {
    clearTimeout(timer);
  }
}
