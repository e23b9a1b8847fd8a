// What the model is given back from an HTTP tool: the status line, the response headers in a bounded form (at most
// MAX_HEADER_LINES lines, each value cut at MAX_HEADER_VALUE_CHARS), a blank line, then the body as text. The
// texts of the body's refusals and truncation are upstream's (taint-gate spec §10, script http_get).
import type { CappedBody } from "./outbound-request.ts";

/** Response header lines given back at most. */
export const MAX_HEADER_LINES = 32;
/** A header value's characters given back at most. */
export const MAX_HEADER_VALUE_CHARS = 512;
/** The body cap as upstream names it. */
const CAP_NAME = "900 KB";
/** A declared Content-Length refused before reading (upstream's threshold, as the seed states it). */
const DECLARED_LIMIT = 900_000;
/** Upstream's threshold: a body decoding to this share of replacement characters or more is not text. */
const REPLACEMENT_SHARE = 0.1;

/** Whether a status is a redirect the tool may follow. */
export function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/** The status line and the bounded headers. */
export function buildHeadText(head: { readonly status: number; readonly statusText: string; readonly rawHeaders: readonly string[] }): string {
  const lines = [`HTTP ${head.status}${head.statusText === "" ? "" : ` ${head.statusText}`}`];
  const total = head.rawHeaders.length / 2;
  for (let i = 0; i < Math.min(total, MAX_HEADER_LINES); i++) {
    const value = head.rawHeaders[2 * i + 1] ?? "";
    const shown = value.length > MAX_HEADER_VALUE_CHARS ? `${value.slice(0, MAX_HEADER_VALUE_CHARS)}[...]` : value;
    lines.push(`${(head.rawHeaders[2 * i] ?? "").toLowerCase()}: ${shown}`);
  }
  if (total > MAX_HEADER_LINES) lines.push(`[... ${total - MAX_HEADER_LINES} more headers not shown]`);
  return lines.join("\n");
}

/** Upstream's refusal of a body whose declared length is over the limit, before reading it. */
export function buildOversizeText(head: { readonly contentLength: number | undefined }): string | undefined {
  if (head.contentLength === undefined || head.contentLength <= DECLARED_LIMIT) return undefined;
  return `response declares ${head.contentLength} bytes, over the ${DECLARED_LIMIT}-byte limit - fetch a more specific page`;
}

const TEXT_TYPES = /^(text\/|application\/([\w.+-]*\+)?(json|xml)\b|application\/(javascript|ecmascript|x-www-form-urlencoded|x-ndjson|yaml|x-yaml|toml)\b|image\/svg\+xml\b)/;

function charsetOf(contentType: string): string {
  return /;\s*charset="?([\w.:-]+)"?/i.exec(contentType)?.[1] ?? "utf-8";
}

function decoderFor(contentType: string): InstanceType<typeof TextDecoder> {
  try {
    return new TextDecoder(charsetOf(contentType));
  } catch {
    return new TextDecoder("utf-8");
  }
}

function notText(contentType: string, bytes: number): { kind: "not_text"; text: string } {
  return { kind: "not_text", text: `non-text content (${contentType === "" ? "unknown type" : contentType}, ${Math.ceil(bytes / 1024)} KB) - this tool returns text only` };
}

/** The body as text (cut on a character boundary, with upstream's suffix when more came), or upstream's refusal of binary content. */
export function buildBodyText(contentType: string, body: CappedBody): { kind: "text" | "not_text"; text: string } {
  const type = contentType.trim().toLowerCase();
  if (type !== "" && !TEXT_TYPES.test(type)) return notText(contentType, body.bytes.byteLength);
  // `stream`: a character the cap cut in two is held back rather than decoded into a replacement character.
  const text = decoderFor(contentType).decode(body.bytes, { stream: body.truncated });
  const replaced = text.length === 0 ? 0 : (text.match(/\uFFFD/g)?.length ?? 0) / text.length;
  if (replaced >= REPLACEMENT_SHARE) return notText(contentType, body.bytes.byteLength);
  return { kind: "text", text: body.truncated ? `${text}\n[...truncated by leviath: response exceeded ${CAP_NAME}]` : text };
}
