// The one capped reading loop: a response body read whole, refused (and the stream cancelled, so the rest is
// never read) once it would pass its cap. Each caller passes the error its callers expect: the runtime upstream's
// cap message, the Kubernetes client an API error.
import { isOverCap } from "../policy/size-caps.ts";

/**
 * A whole body as UTF-8 text; past `maxBytes` the stream is cancelled and `tooLarge()` is thrown (a body of
 * exactly `maxBytes` is read). A truncated body is never returned as if it were whole.
 */
export async function readBoundedText(body: ReadableStream<Uint8Array> | null | undefined, maxBytes: number, tooLarge: () => Error): Promise<string> {
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (isOverCap(total, value.byteLength, maxBytes)) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    total += value.byteLength;
    chunks.push(value);
  }
  return Buffer.concat(chunks, total).toString("utf8");
}
