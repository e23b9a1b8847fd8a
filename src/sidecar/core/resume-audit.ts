// The audit record of a resume: when the policy in force moves to a resumed snapshot (a new
// `readPaths.resumed.sequence`), one `decisions.jsonl` line says what the re-resolution added and removed and
// against which LeviathPolicy generation, so one audit trail runs across the resume.
import type { DecisionSourceName } from "../../api/decision-sources.ts";
import type { RunPolicy } from "../../api/run-policy.ts";
import type { DecisionRecord } from "../storage/audit-writer.ts";

/** The `decision_source` and `code` of a resume record. */
export const RESUME_RECORD = { source: "read_path_resume", code: "grants-reresolved", tool: "read_paths" } as const satisfies { source: DecisionSourceName; code: string; tool: string };

/** The record of a switch from `before` to `after`, or undefined when `after` is not a newer resumed snapshot. */
export function buildResumeRecord(before: RunPolicy, after: RunPolicy, at: { timestamp: number; agentId: string; stage: string }): DecisionRecord | undefined {
  const resumed = after.readPaths.resumed;
  if (resumed === undefined || resumed.sequence === before.readPaths.resumed?.sequence) return undefined;
  const had = new Set(before.readPaths.granted);
  const has = new Set(after.readPaths.granted);
  return {
    timestamp: at.timestamp, agent_id: at.agentId, call_id: `resume-${resumed.sequence}`, tool_name: RESUME_RECORD.tool, stage: at.stage,
    decision: "resume", decision_source: RESUME_RECORD.source, code: RESUME_RECORD.code,
    read_paths_resumed: {
      sequence: resumed.sequence,
      ...(resumed.policyGeneration !== undefined ? { policy_generation: resumed.policyGeneration } : {}),
      added: [...has].filter((g) => !had.has(g)),
      removed: [...had].filter((g) => !has.has(g)),
      allow_blueprint_read_paths: after.readPaths.allowBlueprintReadPaths,
    },
  };
}
