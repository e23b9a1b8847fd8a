// The one place a call's outcome becomes an HTTP status: the core answers in outcomes, `/v1` in statuses (a
// refusal's from its row of the contract's table).
import { lookupRefusalStatus, type RefusalStatus } from "../../api/sidecar-contract.ts";
import type { CallOutcome } from "../core/call-outcomes.ts";

/** The status `/v1/tool-calls` answers an outcome with: 200 allow or run, 202 ask, 4xx/5xx a refusal. */
export function computeCallStatus(outcome: CallOutcome): 200 | 202 | RefusalStatus {
  if (outcome.kind === "deny") return lookupRefusalStatus(outcome.body.code);
  return outcome.kind === "ask" ? 202 : 200;
}
