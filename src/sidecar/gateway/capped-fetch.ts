// The fetch an MCP HTTP client uses, capped (taint-gate spec §10): a buffered reply body at 64 MiB, one SSE
// frame at 8 MiB. Past a cap the response is cancelled (the connection is dropped, the rest never read) and the
// stream fails with the cap's message naming the host.
import { buildBodyCapMessage, buildStreamFrameCapMessage, MAX_BODY_BYTES, MAX_STREAM_FRAME_BYTES } from "../../policy/size-caps.ts";

/** The caps, overridable for tests of the mechanism only (the gateway always uses the constants). */
export interface FetchCaps {
  readonly bodyBytes: number;
  readonly frameBytes: number;
}

const DEFAULT_CAPS: FetchCaps = { bodyBytes: MAX_BODY_BYTES, frameBytes: MAX_STREAM_FRAME_BYTES };

/** The length of the partial frame after `chunk`: bytes since the last blank line (`\n\n`). */
function frameTail(prev: number, chunk: Uint8Array, lastByte: number): { size: number; last: number } {
  let size = prev;
  let last = lastByte;
  for (const b of chunk) {
    size++;
    if (b === 0x0a && last === 0x0a) size = 0;
    if (b !== 0x0d) last = b;
  }
  return { size, last };
}

function capBody(res: Response, host: string, caps: FetchCaps, onCap: (message: string) => void): Response {
  if (res.body === null) return res;
  const sse = (res.headers.get("content-type") ?? "").includes("text/event-stream");
  const reader = res.body.getReader();
  let total = 0;
  let frame = 0;
  let last = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      let over: string | undefined;
      if (sse) {
        const t = frameTail(frame, value, last);
        frame = t.size;
        last = t.last;
        if (frame > caps.frameBytes) over = buildStreamFrameCapMessage(host, caps.frameBytes);
      } else if (total + value.length > caps.bodyBytes) {
        over = buildBodyCapMessage(host, caps.bodyBytes);
      }
      total += value.length;
      if (over === undefined) return controller.enqueue(value);
      onCap(over);
      // Dropped: the connection goes, the rest is never read.
      await reader.cancel(over).catch(() => undefined);
      controller.error(new Error(over));
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** A fetch whose responses are capped; `onCap` hears each cap's message. */
export function createCappedFetch(onCap: (message: string) => void, caps: FetchCaps = DEFAULT_CAPS): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
    return capBody(res, url.hostname, caps, onCap);
  };
}
