// One HTTP exchange of the sidecar's outbound tools, from the sidecar's own container: node:http(s) with a lookup
// that refuses local addresses (address-guard.ts), a fresh connection per request (no pooled socket outlives the
// call), no proxy, no automatic redirect, no compression asked for, the body read to a cap and the connection
// dropped past it so the rest is never read.
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { checkLiteralHost, createGuardedLookup, LocalAddressError } from "./address-guard.ts";

/** One request as sent. */
export interface OutboundHop {
  readonly method: "GET" | "POST";
  /** A URL api/outbound-url.ts accepted (its normalised href). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | undefined;
}

/** How one request may go. */
export interface HopOptions {
  readonly allowLocalNetwork: boolean;
  /** Aborts the request (the call's deadline). */
  readonly signal: AbortSignal;
}

/** A response as far as its head. */
export interface ResponseHead {
  readonly status: number;
  readonly statusText: string;
  /** Names and values as sent, alternating (node's rawHeaders). */
  readonly rawHeaders: readonly string[];
  readonly contentType: string;
  /** The declared Content-Length, when there is one. */
  readonly contentLength: number | undefined;
  readonly location: string | undefined;
  readonly message: IncomingMessage;
}

/** What sending a request came to: a response head, or why none came. */
export type HopResult =
  | { readonly kind: "response"; readonly head: ResponseHead }
  | { readonly kind: "local"; readonly error: LocalAddressError }
  | { readonly kind: "timed-out" }
  | { readonly kind: "failed"; readonly message: string };

const USER_AGENT = "leviath-sidecar";

function toHead(res: IncomingMessage): ResponseHead {
  const length = res.headers["content-length"];
  const parsed = length === undefined ? NaN : Number(length);
  return {
    status: res.statusCode ?? 0, statusText: res.statusMessage ?? "", rawHeaders: res.rawHeaders, message: res,
    contentType: res.headers["content-type"] ?? "", location: res.headers.location,
    contentLength: Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : undefined,
  };
}

function describeFailure(err: unknown, signal: AbortSignal): HopResult {
  if (err instanceof LocalAddressError) return { kind: "local", error: err };
  if (signal.aborted) return { kind: "timed-out" };
  const e = err as NodeJS.ErrnoException;
  return { kind: "failed", message: e.code ?? e.message };
}

/** Sends one request and resolves at its response's head (its body left to read or to drop). */
export function sendHop(hop: OutboundHop, opts: HopOptions): Promise<HopResult> {
  const url = new URL(hop.url);
  const literal = checkLiteralHost(url.hostname, opts.allowLocalNetwork);
  if (literal !== undefined) return Promise.resolve({ kind: "local", error: literal });
  const headers: Record<string, string> = { "user-agent": USER_AGENT, accept: "*/*", ...hop.headers, "accept-encoding": "identity", connection: "close" };
  if (hop.body !== undefined) headers["content-length"] = String(Buffer.byteLength(hop.body));
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = send(url, { method: hop.method, headers, agent: false, lookup: createGuardedLookup(opts.allowLocalNetwork), signal: opts.signal });
    req.on("response", (res) => resolve({ kind: "response", head: toHead(res) }));
    req.on("error", (err) => resolve(describeFailure(err, opts.signal)));
    req.end(hop.body);
  });
}

/** A body read to its cap: the bytes kept, and whether more came (the connection was then dropped). */
export interface CappedBody {
  readonly bytes: Buffer;
  readonly truncated: boolean;
}

/** Reads a response body, keeping at most `cap` bytes; past it the response is destroyed, so the rest is never read. */
export function readCappedBody(res: IncomingMessage, cap: number, signal: AbortSignal): Promise<CappedBody | "timed-out" | { failed: string }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    const onAbort = (): void => {
      res.destroy();
      resolve("timed-out");
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const finish = (v: CappedBody | "timed-out" | { failed: string }): void => {
      signal.removeEventListener("abort", onAbort);
      resolve(signal.aborted ? "timed-out" : v);
    };
    res.on("data", (chunk: Buffer) => {
      const room = cap - kept;
      if (chunk.byteLength <= room) {
        chunks.push(chunk);
        kept += chunk.byteLength;
        return;
      }
      chunks.push(chunk.subarray(0, room));
      res.destroy();
      finish({ bytes: Buffer.concat(chunks), truncated: true });
    });
    res.on("end", () => finish({ bytes: Buffer.concat(chunks), truncated: false }));
    res.on("error", (err: NodeJS.ErrnoException) => finish({ failed: err.code ?? err.message }));
  });
}
