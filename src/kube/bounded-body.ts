import { KubeApiError } from "./errors.ts";

/**
 * Default cap on one API response body: a LIST of ten thousand Runs is about 30 MiB; a body past this is a
 * misbehaving or hostile server, and reading it whole would grow the process without bound.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 128 * 1024 * 1024;

/** The reason of the error a too-large body becomes. */
export const RESPONSE_TOO_LARGE = "ResponseTooLarge";

/**
 * Reads a response body as UTF-8 text, refusing it (and cancelling the stream) once it passes `maxBytes`. The
 * refusal is an `internal` API error naming the request and the cap, never a truncated body parsed as if whole.
 */
export async function readBoundedText(body: ReadableStream<Uint8Array> | null | undefined, maxBytes: number, what: string): Promise<string> {
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new KubeApiError(0, RESPONSE_TOO_LARGE, `${what}: response body exceeds ${maxBytes} bytes; refused`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total).toString("utf8");
}
