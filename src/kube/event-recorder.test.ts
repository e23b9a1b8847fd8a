import { describe, expect, it } from "vitest";
import { decideEventWrite, formatMicroTime, SERIES_EXPIRY_MS, SERIES_FLUSH_MS } from "./event-recorder.ts";

describe("decideEventWrite", () => {
  const seen = { count: 1, writtenCount: 1, lastObservedMs: 1000, lastWriteMs: 1000 };
  it("creates the first occurrence and patches the series at once on the second, as client-go", () => {
    expect(decideEventWrite(undefined, 0)).toBe("create");
    expect(decideEventWrite(seen, 2000)).toBe("patch");
  });
  it("then only counts until the flush interval passed", () => {
    const series = { count: 3, writtenCount: 2, lastObservedMs: 2000, lastWriteMs: 2000 };
    expect(decideEventWrite(series, 2000 + SERIES_FLUSH_MS - 1)).toBe("count");
    expect(decideEventWrite(series, 2000 + SERIES_FLUSH_MS)).toBe("patch");
  });
  it("starts a new Event once a series was not seen for six minutes", () => {
    expect(decideEventWrite(seen, 1000 + SERIES_EXPIRY_MS + 1)).toBe("create");
  });
});

describe("formatMicroTime", () => {
  it("writes microseconds, as MicroTime is serialised", () => {
    expect(formatMicroTime(Date.parse("2026-01-01T00:00:00.123Z"))).toBe("2026-01-01T00:00:00.123000Z");
  });
});
