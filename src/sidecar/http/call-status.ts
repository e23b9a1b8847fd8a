// The one place a call's outcome becomes an HTTP status: the core answers in outcomes, `/v1` in statuses.
import type { CallOutcome, RefusalKind } from "../core/call-outcomes.ts";

/** The HTTP status of each kind of refusal. */
const REFUSAL_STATUS: Readonly<Record<RefusalKind, 400 | 403 | 409 | 503>> = { invalid: 400, refused: 403, conflict: 409, unavailable: 503 };

/** The status `/v1/tool-calls` answers an outcome with: 200 allow or run, 202 ask, 4xx/5xx a refusal. */
export function computeCallStatus(outcome: CallOutcome): 200 | 202 | 400 | 403 | 409 | 503 {
  if (outcome.kind === "deny") return REFUSAL_STATUS[outcome.refusal];
  return outcome.kind === "ask" ? 202 : 200;
}
