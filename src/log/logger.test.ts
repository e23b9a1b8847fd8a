import { describe, expect, it } from "vitest";
import { componentLogger, createLogger, objectLogger } from "./logger.ts";

function capture(): { lines: Record<string, unknown>[]; stream: { write(s: string): void } } {
  const lines: Record<string, unknown>[] = [];
  return { lines, stream: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) } };
}

describe("createLogger", () => {
  it("writes levels as names, not pino's numbers, in every child logger", () => {
    const { lines, stream } = capture();
    const log = createLogger("debug", stream);
    log.info("up");
    componentLogger(log, "sidecar").warn("careful");
    objectLogger(log, "run", "team-a/r1", "abc").debug("reconciled");
    expect(lines.map((l) => l["level"])).toEqual(["info", "warn", "debug"]);
    expect(lines[2]).toMatchObject({ controller: "run", namespace: "team-a", name: "r1", reconcileID: "abc", msg: "reconciled" });
    expect(typeof lines[0]?.["time"]).toBe("string");
  });

  it("still filters by level", () => {
    const { lines, stream } = capture();
    const log = createLogger("warn", stream);
    log.info("hidden");
    log.error("shown");
    expect(lines.map((l) => l["msg"])).toEqual(["shown"]);
  });
});
