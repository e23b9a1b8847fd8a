// A stage's `transitions` table as the edges a run follows: the one reading of the blueprint's stage graph that the
// reference runtime (runtime/reference/stage-plan.ts), the adapter's stage steps and the sidecar's run policy share.
// What is not followed (an unknown stage, condition or key) is reported in `warnings`, never dropped in silence.

/** Transition conditions this runtime follows. */
export const HONOURED_CONDITIONS = ["llm_choice", "always", "max_iterations", "error"] as const;
/** A transition's condition. */
export type TransitionCondition = (typeof HONOURED_CONDITIONS)[number];

/** One outgoing edge. */
export interface TransitionPlan {
  readonly to: string;
  readonly condition: TransitionCondition;
  readonly hint: string;
  /** `clear` drops the conversation when taking it; `direct` (and the rest, with a warning) keeps it. */
  readonly clear: boolean;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** A stage's `transitions` table as edges (`undefined`: none declared); what is not followed goes to `warnings`. */
export function parseTransitions(raw: unknown, where: string, stageNames: ReadonlySet<string>, warnings: string[]): TransitionPlan[] | undefined {
  if (raw === undefined) return undefined;
  if (!isRecord(raw)) {
    warnings.push(`${where}: not a table; treated as terminal`);
    return [];
  }
  const out: TransitionPlan[] = [];
  for (const [to, edgeRaw] of Object.entries(raw)) {
    const edge = isRecord(edgeRaw) ? edgeRaw : {};
    const at = `${where}.${to}`;
    if (!stageNames.has(to)) { warnings.push(`${at}: no stage '${to}'; edge ignored`); continue; }
    const condition = str(edge["condition"]) ?? "llm_choice";
    if (!(HONOURED_CONDITIONS as readonly string[]).includes(condition)) { warnings.push(`${at}.condition: '${condition}' is not followed by leviath agent (followed: ${HONOURED_CONDITIONS.join(", ")}); edge ignored`); continue; }
    const transform = str(edge["transform"]) ?? "direct";
    if (transform !== "direct" && transform !== "clear") warnings.push(`${at}.transform: '${transform}' is taken as 'direct'`);
    for (const key of Object.keys(edge)) if (!["condition", "hint", "transform"].includes(key)) warnings.push(`${at}.${key}: ignored by leviath agent`);
    out.push({ to, condition: condition as TransitionCondition, hint: str(edge["hint"]) ?? "", clear: transform === "clear" });
  }
  return out;
}
