// The Run's PolicyWouldFlip condition (docs/operations.md, "Rolling out a policy"), pure.
import { CONDITION, REASON, type RunPolicyRollout, type RunStatus } from "../../api/status.ts";
import type { ConditionDecision } from "../conditions.ts";

/**
 * The Run's PolicyWouldFlip condition: True while its sidecar reports would-flips (`status.policyFlips`) against the
 * warn candidate still out; absent otherwise. Its first True is a Warning Event on the Run (status-events.ts).
 */
export function decideWouldFlipCondition(rollout: RunPolicyRollout | undefined, flips: RunStatus["policyFlips"]): ConditionDecision | undefined {
  const candidate = rollout?.candidate;
  if (candidate?.enforcement !== "warn" || flips === undefined || flips.generation !== candidate.generation || flips.count === 0) return undefined;
  return {
    type: CONDITION.policyWouldFlip, status: "True", reason: REASON.wouldFlip,
    message: `${flips.count} call(s) would be decided otherwise under the warn candidate, LeviathPolicy generation ${flips.generation}${flips.last ? `; last: ${flips.last}` : ""} (kubectl leviath why)`,
  };
}
