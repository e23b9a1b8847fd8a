import { isDeepStrictEqual } from "node:util";
import type { KubeObject } from "../kube/objects.ts";

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

/**
 * Whether the live object is exactly `desired` apart from its metadata and status: every other field (a
 * ConfigMap's `data` and `binaryData`, a NetworkPolicy's spec) equal, none added; the metadata we set compared as
 * for any child. What a replace (PUT) would change nothing in.
 */
export function isExactly(desired: KubeObject, live: KubeObject | undefined): boolean {
  if (live === undefined || !isApplied(desired.metadata, live.metadata)) return false;
  const { apiVersion, kind, metadata: _metadata, ...body } = desired;
  const { apiVersion: _v, kind: _k, metadata: _m, status: _s, ...liveBody } = live as KubeObject & { status?: unknown };
  return apiVersion === live.apiVersion && kind === live.kind && isDeepStrictEqual(body, liveBody);
}

/** Waits for every write, so none is still in flight when the pass ends, then throws the first failure. */
export async function settleAll<T>(writes: Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(writes);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}
