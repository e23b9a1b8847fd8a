// The one capped fetch (taint-gate spec §10): a reply body read through it stops at 64 MiB, and one SSE frame of a
// `text/event-stream` reply at 8 MiB, with upstream's messages naming the peer. Past a cap the response is
// cancelled (the connection goes, the rest is never read) and its body fails with the cap's message. The runtime's
// MCP client to the sidecar and the sidecar's gateway to an admin's MCP servers both fetch through it.
import { buildBodyCapMessage, buildStreamFrameCapMessage, isOverCap, MAX_BODY_BYTES, MAX_STREAM_FRAME_BYTES } from "../policy/size-caps.ts";

/** A read stopped at a cap; `message` is upstream's text. */
export class CapExceededError extends Error {
  override readonly name = "CapExceededError";
}

/** The caps, overridable for tests of the mechanism only (every caller uses the constants). */
export interface FetchCaps {
  readonly bodyBytes: number;
  readonly frameBytes: number;
}

/** Options of {@link createCappedFetch}. */
export interface CappedFetchOptions {
  /** How a cap's message names the peer (default: each request URL's hostname). */
  readonly peer?: string;
  /** Hears each cap's message when it is hit (the gateway fails the call waiting on the stream at once). */
  readonly onCap?: (message: string) => void;
  readonly caps?: FetchCaps;
}

const DEFAULT_CAPS: FetchCaps = { bodyBytes: MAX_BODY_BYTES, frameBytes: MAX_STREAM_FRAME_BYTES };

/**
 * A counter of the SSE frame in progress: the bytes since the last blank line (`\n\n`, a `\r` before a `\n` being
 * passed over), carried across chunks. Feeding it a chunk answers whether the frame has passed `cap`.
 */
export function createFrameMeter(cap: number): (chunk: Uint8Array) => boolean {
  let inFrame = 0;
  let prev = 0;
  return (chunk) => {
    for (const b of chunk) {
      inFrame = b === 0x0a && prev === 0x0a ? 0 : inFrame + 1;
      if (b !== 0x0d) prev = b;
      if (inFrame > cap) return true;
    }
    return false;
  };
}

function capBody(res: Response, peer: string, caps: FetchCaps, onCap: ((message: string) => void) | undefined): Response {
  if (res.body === null) return res;
  const sse = (res.headers.get("content-type") ?? "").includes("text/event-stream");
  const overFrame = createFrameMeter(caps.frameBytes);
  const reader = res.body.getReader();
  let total = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      let over: string | undefined;
      if (sse) {
        if (overFrame(value)) over = buildStreamFrameCapMessage(peer, caps.frameBytes);
      } else if (isOverCap(total, value.byteLength, caps.bodyBytes)) {
        over = buildBodyCapMessage(peer, caps.bodyBytes);
      }
      total += value.byteLength;
      if (over === undefined) return controller.enqueue(value);
      onCap?.(over);
      // Dropped: the connection goes, the rest is never read.
      await reader.cancel(over).catch(() => undefined);
      controller.error(new CapExceededError(over));
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** `fetch`, with each response body counted as it is read and failed (its stream cancelled) past its cap. */
export function createCappedFetch(opts: CappedFetchOptions = {}): typeof fetch {
  const caps = opts.caps ?? DEFAULT_CAPS;
  return async (input, init) => {
    const res = await fetch(input, init);
    const peer = opts.peer ?? new URL(typeof input === "string" || input instanceof URL ? input : input.url).hostname;
    return capBody(res, peer, caps, opts.onCap);
  };
}
