// The Run's AwaitingApproval condition: which prompts wait (id, tool and what the call acts on) and the command
// that answers one, so `kubectl get run -o yaml`, `kubectl describe run` and `kubectl wait` readers need no
// jsonpath query to find the id. Pure.
import { CONDITION, REASON, type RunStatus } from "../../api/status.ts";
import type { ConditionDecision } from "../conditions.ts";

/** Prompts the message names at most; the rest are counted. */
export const MAX_LISTED_PROMPTS = 3;

type Pending = NonNullable<RunStatus["pendingApprovals"]>[number];

function describePrompt(p: Pending): string {
  return `'${p.id}' (${p.tool}${p.target === undefined ? "" : ` ${JSON.stringify(p.target)}`}${p.stage === undefined ? "" : `, stage ${p.stage}`})`;
}

/** AwaitingApproval of a live Run from the prompts its sidecar reports pending. */
export function decideAwaitingCondition(run: string, pending: readonly Pending[] | undefined): ConditionDecision {
  const type = CONDITION.awaitingApproval;
  if (pending === undefined || pending.length === 0) return { type, status: "False", reason: REASON.noPendingApproval, message: "no prompt is waiting" };
  const listed = pending.slice(0, MAX_LISTED_PROMPTS).map(describePrompt).join(", ");
  const more = pending.length > MAX_LISTED_PROMPTS ? ` and ${pending.length - MAX_LISTED_PROMPTS} more` : "";
  const what = pending.length === 1 ? `prompt ${listed} waits` : `${pending.length} prompts wait: ${listed}${more}`;
  return { type, status: "True", reason: REASON.pendingApproval, message: `${what}; answer with 'kubectl leviath approve ${run} ${pending[0]!.id} --once' (or --deny)` };
}
