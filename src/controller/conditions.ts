import type { Condition } from "../api/status.ts";
import { buildCanonicalJson } from "../sandbox/hash.ts";

/** A condition as a check function decides it; the time and generation are filled in by {@link buildConditions}. */
export interface ConditionDecision {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
}

/**
 * The conditions to write: the decided ones in order, each keeping its previous `lastTransitionTime` unless
 * its status changed (a changed reason or message alone is not a transition).
 */
export function buildConditions(previous: readonly Condition[] | undefined, decided: readonly ConditionDecision[], now: string, generation: number): Condition[] {
  return decided.map((d) => {
    const before = previous?.find((c) => c.type === d.type);
    const lastTransitionTime = before && before.status === d.status ? before.lastTransitionTime : now;
    return { ...d, observedGeneration: generation, lastTransitionTime };
  });
}

/** Whether two status objects say the same thing (key order and undefined fields ignored). */
export function isSameStatus(a: unknown, b: unknown): boolean {
  return buildCanonicalJson(a ?? {}) === buildCanonicalJson(b ?? {});
}

/** Format a zod-style issue path as the field it names (`spec.stages[1].name`). */
export function formatFieldPath(root: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, seg) => (typeof seg === "number" ? `${acc}[${seg}]` : `${acc}.${String(seg)}`), root);
}
