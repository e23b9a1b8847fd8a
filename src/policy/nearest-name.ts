// The nearest known name to one that is not: what a "did you mean" names for a misspelt tool (`shel`) or a
// misspelt key of a config table (`trasport`). Pure.

/** Edits at most between a name and the known one it is taken for (`shel` is 1 from `shell`). */
const MAX_DISTANCE = 2;

/** Levenshtein distance, stopping early once it exceeds `max`. */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    if (Math.min(...next) > max) return max + 1;
    row = next;
  }
  return row[b.length]!;
}

/** The name of `known` nearest to `name` (case ignored, at most two edits), if one is. */
export function findNearestName(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  let best: { name: string; d: number } | undefined;
  for (const candidate of known) {
    const d = distance(lower, candidate.toLowerCase(), MAX_DISTANCE);
    if (d <= MAX_DISTANCE && (best === undefined || d < best.d)) best = { name: candidate, d };
  }
  return best?.name;
}
