import { describe, expect, it } from "vitest";
import { formatApiTime, formatMicroTime } from "./time.ts";

describe("formatApiTime", () => {
  it("writes RFC 3339 to the second, from milliseconds or a Date", () => {
    expect(formatApiTime(Date.parse("2026-01-01T00:00:00.123Z"))).toBe("2026-01-01T00:00:00Z");
    expect(formatApiTime(new Date("2026-03-04T05:06:07.999Z"))).toBe("2026-03-04T05:06:07Z");
  });
});

describe("formatMicroTime", () => {
  it("writes RFC 3339 with microseconds", () => {
    expect(formatMicroTime(new Date("2026-01-01T00:00:00.123Z"))).toBe("2026-01-01T00:00:00.123000Z");
  });
});
