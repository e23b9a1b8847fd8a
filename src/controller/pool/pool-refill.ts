// How fast a warm pool refills (docs/controller.md, "Sizing a pool"; issue 42): a pool that fills behind every
// adoption at once competes with the Runs it serves, whose hand-over (the sidecar's takeover, the runtime handed its
// binding) runs on the same node in the same second as the new pool pods' starts. So a pool refills only once its
// last adoption is REFILL_AFTER_MS old, and keeps at most MAX_STARTING pods starting at a time. Pure: the pool
// reconciler applies it to what decidePoolPods wants.

/** How long after a pool's last adoption it waits before it refills: past the hand-over's p90 on the real node. */
export const REFILL_AFTER_MS = 1_000;
/** The most pods of one pool starting at once (a new pool fills this many at a time, too). */
export const MAX_STARTING = 2;

/** How many pool pods to create now, and when to look again if some are held back. */
export interface Refill {
  readonly create: number;
  readonly retryAfterMs?: number | undefined;
}

/**
 * Of `missing` pods (what decidePoolPods would create), how many to create now: none while the pool's last adoption
 * is younger than {@link REFILL_AFTER_MS} (look again when it is not), and never more than brings `starting` to
 * {@link MAX_STARTING} (a pod that becomes ready brings the pool back: its event requeues it).
 */
export function decideRefill(input: { readonly missing: number; readonly starting: number; readonly sinceAdoptionMs: number | undefined }): Refill {
  const { missing, starting, sinceAdoptionMs } = input;
  if (missing <= 0) return { create: 0 };
  if (sinceAdoptionMs !== undefined && sinceAdoptionMs < REFILL_AFTER_MS) return { create: 0, retryAfterMs: REFILL_AFTER_MS - sinceAdoptionMs };
  return { create: Math.max(0, Math.min(missing, MAX_STARTING - starting)) };
}
