// Reads from a model provider under the seed's caps (taint-gate spec §10): a buffered body stops at 64 MiB and
// one streamed frame at 8 MiB, with upstream's messages naming the cap and the peer. Past a cap the stream is
// cancelled, so the rest is never read. The counting is io/'s, the same as the capped fetch's: the body through
// readBoundedText, the frame through createFrameMeter.
import { readBoundedText } from "../../../io/bounded-text.ts";
import { CapExceededError, createFrameMeter } from "../../../io/capped-fetch.ts";
import { buildBodyCapMessage, buildStreamFrameCapMessage, MAX_BODY_BYTES, MAX_STREAM_FRAME_BYTES } from "../../../policy/size-caps.ts";

/** A whole body as UTF-8 text, refused (and the stream cancelled) once it would pass `cap` bytes, with upstream's message. */
export function readCappedText(body: ReadableStream<Uint8Array> | null, host: string, cap: number = MAX_BODY_BYTES): Promise<string> {
  return readBoundedText(body, cap, () => new CapExceededError(buildBodyCapMessage(host, cap)));
}

/** One server-sent event: its `event:` name (empty when none) and its `data:` lines joined by newlines. */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
}

/** Parses one SSE frame (the lines between two blank lines); comments and unknown fields are dropped. */
export function parseSseFrame(frame: string): SseEvent | undefined {
  let event = "";
  const data: string[] = [];
  for (const line of frame.split(/\r\n|\r|\n/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length === 0 && event === "" ? undefined : { event, data: data.join("\n") };
}

/** Where the next frame ends in `buf` from `from`: the index of its first newline and the separator's length. */
function findFrameEnd(buf: Buffer, from: number): { at: number; length: number } | undefined {
  const lf = buf.indexOf("\n\n", from);
  const crlf = buf.indexOf("\n\r\n", from);
  if (lf < 0 && crlf < 0) return undefined;
  return lf >= 0 && (crlf < 0 || lf <= crlf) ? { at: lf, length: 2 } : { at: crlf, length: 3 };
}

/**
 * The events of an SSE body, each frame held under `cap` bytes (counted by io/'s frame meter, as the capped fetch
 * counts them): a frame, complete or partial, that grows past it stops the read with
 * `stream frame exceeded 8 MiB from <peer>`. The stream is cancelled when the consumer stops early.
 */
export async function* readSseEvents(body: ReadableStream<Uint8Array> | null, peer: string, cap: number = MAX_STREAM_FRAME_BYTES): AsyncGenerator<SseEvent> {
  if (body === null) return;
  const reader = body.getReader();
  const overFrame = createFrameMeter(cap);
  // The partial frame as the chunks it came in: joined only once a frame end arrives, so a long frame is copied
  // once, not once per chunk.
  let pending: Buffer[] = [];
  let tail = Buffer.alloc(0);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (overFrame(value)) throw new CapExceededError(buildStreamFrameCapMessage(peer, cap));
      const chunk = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
      const probe = Buffer.concat([tail, chunk]);
      if (findFrameEnd(probe, 0) === undefined) {
        pending.push(chunk);
        tail = probe.subarray(Math.max(0, probe.length - 2));
        continue;
      }
      const all = Buffer.concat([...pending, chunk]);
      let from = 0;
      for (let end = findFrameEnd(all, from); end !== undefined; end = findFrameEnd(all, from)) {
        const event = parseSseFrame(all.toString("utf8", from, end.at));
        from = end.at + end.length;
        if (event !== undefined) yield event;
      }
      const rest = all.subarray(from);
      pending = rest.length === 0 ? [] : [rest];
      tail = rest.subarray(Math.max(0, rest.length - 2));
    }
    const last = parseSseFrame(Buffer.concat(pending).toString("utf8"));
    if (last !== undefined) yield last;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
