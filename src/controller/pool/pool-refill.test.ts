import { describe, expect, it } from "vitest";
import { decideRefill, MAX_STARTING, REFILL_AFTER_MS } from "./pool-refill.ts";

describe("decideRefill", () => {
  it("creates nothing for a full pool", () => {
    expect(decideRefill({ missing: 0, starting: 0, sinceAdoptionMs: undefined })).toEqual({ create: 0 });
  });

  it("holds the refill while the last adoption's hand-over may still run, and says when to look again", () => {
    expect(decideRefill({ missing: 3, starting: 0, sinceAdoptionMs: 200 })).toEqual({ create: 0, retryAfterMs: REFILL_AFTER_MS - 200 });
    expect(decideRefill({ missing: 3, starting: 0, sinceAdoptionMs: REFILL_AFTER_MS })).toEqual({ create: MAX_STARTING });
  });

  it("keeps at most MAX_STARTING pods starting, adopted or not", () => {
    expect(decideRefill({ missing: 6, starting: 0, sinceAdoptionMs: undefined })).toEqual({ create: MAX_STARTING });
    expect(decideRefill({ missing: 6, starting: MAX_STARTING - 1, sinceAdoptionMs: 60_000 })).toEqual({ create: 1 });
    expect(decideRefill({ missing: 6, starting: MAX_STARTING, sinceAdoptionMs: 60_000 })).toEqual({ create: 0 });
    expect(decideRefill({ missing: 1, starting: 0, sinceAdoptionMs: 60_000 })).toEqual({ create: 1 });
  });
});
