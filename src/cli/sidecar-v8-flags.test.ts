import { describe, expect, it } from "vitest";
import { SIDECAR_MEMORY_ENV, SIDECAR_V8_FLAGS } from "../sandbox/pod-settings.ts";
import { UsageError } from "./io.ts";
import { ALLOWED_SIDECAR_V8_FLAGS, parseSidecarV8Flags, SIDECAR_V8_FLAGS_ENV } from "./sidecar-v8-flags.ts";

describe("the V8 flags the sidecar sets on itself", () => {
  it("takes nothing when the variable is unset or blank", () => {
    expect(parseSidecarV8Flags(undefined)).toEqual([]);
    expect(parseSidecarV8Flags("  ")).toEqual([]);
  });

  it("takes the container's flags, each one allowed", () => {
    expect(SIDECAR_MEMORY_ENV[SIDECAR_V8_FLAGS_ENV]).toBe(SIDECAR_V8_FLAGS);
    const flags = parseSidecarV8Flags(SIDECAR_V8_FLAGS);
    expect(flags.length).toBeGreaterThan(0);
    for (const flag of flags) expect(ALLOWED_SIDECAR_V8_FLAGS).toContain(flag);
  });

  it("refuses any flag not on its list, naming it, rather than pass it to V8", () => {
    expect(() => parseSidecarV8Flags(`${SIDECAR_V8_FLAGS} --allow-natives-syntax`)).toThrow(UsageError);
    expect(() => parseSidecarV8Flags("--no-maglev-destroy-on-backgroundx")).toThrow(/'--no-maglev-destroy-on-backgroundx' is not a flag the sidecar sets/);
  });
});
