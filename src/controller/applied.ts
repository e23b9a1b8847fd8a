/**
 * Whether everything we would apply is already in the live object: every field we set has the same value
 * (maps compared key by key, lists item by item and of equal length, so an extra Role rule is a difference).
 * Fields others set, and defaults the server filled in, do not count. An apply that would change nothing is
 * skipped, so a pass over a settled Run sends no request at all.
 */
export function isApplied(desired: unknown, live: unknown): boolean {
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((d, i) => isApplied(d, live[i]));
  }
  if (desired !== null && typeof desired === "object") {
    if (live === null || typeof live !== "object" || Array.isArray(live)) return false;
    return Object.entries(desired as Record<string, unknown>).every(([k, v]) => v === undefined || isApplied(v, (live as Record<string, unknown>)[k]));
  }
  return desired === live;
}
