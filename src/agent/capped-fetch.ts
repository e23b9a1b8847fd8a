// A fetch for the MCP client that holds the sidecar's replies to the seed's caps, which apply to MCP HTTP replies
// and their SSE streams too: a JSON body stops at 64 MiB, one SSE frame at 8 MiB, with upstream's messages.
import { buildBodyCapMessage, buildStreamFrameCapMessage, MAX_BODY_BYTES, MAX_STREAM_FRAME_BYTES } from "../policy/size-caps.ts";
import { CapExceededError } from "./providers/capped-read.ts";

/** Bytes since the last frame end (`\n\n`), carried across chunks by the previous byte. */
function frameCounter(cap: number, peer: string): (chunk: Uint8Array) => void {
  let inFrame = 0;
  let prev = 0;
  return (chunk) => {
    for (const b of chunk) {
      inFrame = b === 0x0a && prev === 0x0a ? 0 : inFrame + 1;
      if (b !== 0x0d) prev = b;
      if (inFrame > cap) throw new CapExceededError(buildStreamFrameCapMessage(peer, cap));
    }
  };
}

/** `fetch`, with the response body counted as it is read and cut (an error) past its cap. */
export function createCappedFetch(peer: string, caps = { body: MAX_BODY_BYTES, frame: MAX_STREAM_FRAME_BYTES }): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    if (res.body === null) return res;
    const sse = (res.headers.get("content-type") ?? "").includes("text/event-stream");
    let total = 0;
    const countFrame = frameCounter(caps.frame, peer);
    const body = res.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (sse) countFrame(chunk);
        else if ((total += chunk.byteLength) > caps.body) throw new CapExceededError(buildBodyCapMessage(peer, caps.body));
        controller.enqueue(chunk);
      },
    }));
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
