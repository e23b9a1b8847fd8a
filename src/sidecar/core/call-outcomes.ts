// What the call-handling core answers, free of any transport: an allow (executed here), a run (the runtime
// executes), an ask (a prompt is pending) or a refusal `{decision: "deny", code, message}` with the text the
// model is given as the tool result. The bodies and the refusal table are the contract's (api/sidecar-contract.ts);
// each front-end (http/, mcp/) maps an outcome to its own wire.
import type { AllowBody, DenyBody, RefusalCode, RefusalMessageArgs, RefusalOutcome, RefusalSource, RunBody } from "../../api/sidecar-contract.ts";
import { buildRefusalMessage, REFUSALS } from "../../api/sidecar-contract.ts";
import type { PendingApproval } from "./approvals.ts";

/** A call waiting for an answer (`POST /v1/tool-calls` 202). */
export interface AskBody {
  readonly id: string;
  readonly tool: string;
  readonly decision: "ask";
  readonly approval: PendingApproval;
}

/** The answer to one call. */
export type CallOutcome =
  | { readonly kind: "allow"; readonly body: AllowBody }
  | { readonly kind: "run"; readonly body: RunBody }
  | { readonly kind: "ask"; readonly body: AskBody }
  | { readonly kind: "deny"; readonly refusal: RefusalOutcome; readonly body: DenyBody; readonly source?: RefusalSource };

/** A refusal outcome, its kind from the code's row; `source` only when it is a recorded decision. */
export function buildDenyOutcome(body: DenyBody, source?: RefusalSource): CallOutcome {
  return { kind: "deny", refusal: REFUSALS[body.code].outcome, body, ...(source === undefined ? {} : { source }) };
}

/**
 * A refusal that is no recorded decision (a malformed request, a reused id, the sidecar stopping, a record that
 * could not be written): no decision source rides beside it. Recorded refusals are the service's (`#deny`).
 */
export function buildDeny<C extends RefusalCode>(id: string, tool: string, code: C, ...args: RefusalMessageArgs<C>): CallOutcome {
  return buildDenyOutcome({ id, tool, decision: "deny", code, message: buildRefusalMessage(code, ...args) });
}
