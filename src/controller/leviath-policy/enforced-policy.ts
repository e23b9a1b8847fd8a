// Rolling a LeviathPolicy out (docs/operations.md, "Rolling out a policy"): a generation in `warn` or `audit` is a
// candidate, and the policy in force stays the last `enforce` generation. The controller remembers that generation
// in memory and on the policy's status (`status.inForce`, written only by the controller), so a restart while a
// candidate is out still pins new Runs to what was in force. Pure.
import { EMPTY_POLICY, LeviathPolicySpecSchema, type EnforcementMode, type LeviathPolicySpec } from "../../api/leviath-policy.ts";

/** A generation out as a candidate: decided beside the policy in force, never enforced. */
export interface PolicyCandidate {
  readonly spec: LeviathPolicySpec;
  readonly generation: number;
  readonly enforcement: Exclude<EnforcementMode, "enforce">;
}

/** The last `enforce` generation as the policy's status records it: its generation and its spec as JSON text. */
export interface EnforcedRecord {
  readonly generation: number;
  readonly spec: string;
}

/** How loose each mode is: moving to a higher rank is loosening (it needs the verb `loosen`). */
const LOOSENESS: Readonly<Record<EnforcementMode, number>> = { enforce: 0, warn: 1, audit: 2 };

/** The policy in force while a candidate is out: remembered, else recorded, else (none ever enforced) upstream's defaults. */
export function decideInForce(remembered: { spec: LeviathPolicySpec; generation: number } | undefined, record: EnforcedRecord | undefined):
  { ok: true; value: { spec: LeviathPolicySpec; generation: number }; recorded: boolean } | { ok: false; message: string } {
  if (remembered) return { ok: true, value: { spec: remembered.spec, generation: remembered.generation }, recorded: true };
  if (record === undefined) return { ok: true, value: { spec: EMPTY_POLICY, generation: 0 }, recorded: false };
  let json: unknown;
  try {
    json = JSON.parse(record.spec);
  } catch {
    json = undefined;
  }
  const parsed = LeviathPolicySpecSchema.safeParse(json);
  // Fail closed: a record that no longer parses is no policy to fall back on, and new Runs wait.
  if (!parsed.success || parsed.data.enforcement !== "enforce") return { ok: false, message: `status.inForce (generation ${record.generation}) does not hold an enforced policy: new Runs wait until a generation is enforced` };
  return { ok: true, value: { spec: parsed.data, generation: record.generation }, recorded: true };
}

/** The record of an enforced generation, as written to the policy's status. */
export function buildEnforcedRecord(spec: unknown, generation: number): EnforcedRecord {
  return { generation, spec: JSON.stringify(spec ?? {}) };
}

/** Whether a mode change loosens (enforce → warn/audit, warn → audit), tightens, or is none. */
export function decideModeChange(before: EnforcementMode | undefined, after: EnforcementMode): "loosened" | "tightened" | undefined {
  if (before === undefined || before === after) return undefined;
  return LOOSENESS[after] > LOOSENESS[before] ? "loosened" : "tightened";
}
