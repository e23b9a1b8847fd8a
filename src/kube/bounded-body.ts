import { KubeApiError } from "./errors.ts";

/**
 * Default cap on one API response body: a LIST of ten thousand Runs is about 30 MiB; a body past this is a
 * misbehaving or hostile server, and reading it whole would grow the process without bound.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 128 * 1024 * 1024;

/** The reason of the error a too-large body becomes. */
export const RESPONSE_TOO_LARGE = "ResponseTooLarge";

/** The error a response body past `maxBytes` becomes: an `internal` API error naming the request and the cap. */
export function buildResponseTooLargeError(what: string, maxBytes: number): KubeApiError {
  return new KubeApiError(0, RESPONSE_TOO_LARGE, `${what}: response body exceeds ${maxBytes} bytes; refused`);
}
