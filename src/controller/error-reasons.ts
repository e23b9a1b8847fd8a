// The condition reason of a failed request: one table from what the API layer reports (an HTTP status of the
// server's refusal, or a timeout or network failure before any answer) to a named reason. The error's text stays
// the condition's message; the reason is what a person or a tool can match on. The retry policy and metric label of
// the same error are its kind (kube/errors.ts, classifyError); this table refines that kind into a reason.
import { REASON } from "../api/status.ts";
import { classifyError, KubeApiError } from "../kube/errors.ts";

/** The reason of each HTTP status the API server refuses with, where one is known. */
const REASON_BY_STATUS: Readonly<Record<number, string>> = {
  400: REASON.invalid,
  401: REASON.forbidden,
  // RBAC, a Pod Security or other admission refusal, an exceeded quota.
  403: REASON.forbidden,
  404: REASON.notFound,
  // A write at a stale resourceVersion, or a name taken.
  409: REASON.conflict,
  422: REASON.invalid,
  429: REASON.tooManyRequests,
  504: REASON.timeout,
};

/** Error names a request gives up with when it took too long. */
const TIMEOUT_NAMES: ReadonlySet<string> = new Set(["AbortError", "TimeoutError"]);
/** Node's and undici's codes for a timed-out connection or request. */
const TIMEOUT_CODES: ReadonlySet<string> = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** The condition reason for a failed request (see the table above); `InternalError` for anything unknown. */
export function decideErrorReason(err: unknown): string {
  if (err instanceof KubeApiError) return REASON_BY_STATUS[err.code] ?? (err.code >= 500 ? REASON.serverError : REASON.internalError);
  const e = err as { name?: string; code?: string; cause?: { code?: string } } | undefined;
  const code = e?.code ?? e?.cause?.code;
  if (TIMEOUT_NAMES.has(e?.name ?? "") || (code !== undefined && TIMEOUT_CODES.has(code))) return REASON.timeout;
  return classifyError(err) === "transient" ? REASON.unreachable : REASON.internalError;
}
