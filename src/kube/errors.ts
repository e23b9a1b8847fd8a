/** The closed set of error kinds: each maps to one retry policy, one condition reason and one metric label. */
export const ERROR_KINDS = ["transient", "invalid", "forbidden", "internal"] as const;
/** An error kind. */
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** A failed API request, with the server's `Status` fields when it sent one. */
export class KubeApiError extends Error {
  override readonly name = "KubeApiError";
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

/** Build the error for a non-2xx response from its body (a `Status` object, or anything else). */
export function parseApiError(code: number, body: string, what: string): KubeApiError {
  try {
    const status = JSON.parse(body) as { reason?: string; message?: string };
    return new KubeApiError(code, status.reason ?? "Unknown", `${what}: ${status.message ?? body}`);
  } catch {
    return new KubeApiError(code, "Unknown", `${what}: HTTP ${code} ${body.slice(0, 200)}`);
  }
}

/** Whether `err` is an API error with this HTTP status. */
export function isApiStatus(err: unknown, code: number): boolean {
  return err instanceof KubeApiError && err.code === code;
}

/**
 * Classify any error from the API layer. Conflicts, throttling, server errors and network failures are transient
 * (retry with backoff); a rejected object is invalid (retrying cannot help); 401/403 are forbidden (retry slowly:
 * RBAC may be fixed); anything else is a bug of ours.
 */
export function classifyError(err: unknown): ErrorKind {
  return err instanceof KubeApiError ? classifyStatus(err.code) : classifyThrown(err);
}

/** The HTTP statuses that are not bugs of ours, by kind; any other status is internal. */
const STATUS_KINDS: ReadonlyMap<number, ErrorKind> = new Map([
  [409, "transient"], [429, "transient"],
  [400, "invalid"], [404, "invalid"], [422, "invalid"],
  [401, "forbidden"], [403, "forbidden"],
]);

function classifyStatus(code: number): ErrorKind {
  return code >= 500 ? "transient" : (STATUS_KINDS.get(code) ?? "internal");
}

/** An error thrown below HTTP: an abort, a timeout or a network failure is transient. */
function classifyThrown(err: unknown): ErrorKind {
  const e = err as { name?: string; code?: string; cause?: { code?: string } } | undefined;
  const code = e?.code ?? e?.cause?.code;
  if (e?.name === "AbortError" || e?.name === "TimeoutError" || e?.name === "TypeError" && code !== undefined) return "transient";
  if (typeof code === "string" && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code)) return "transient";
  return "internal";
}
