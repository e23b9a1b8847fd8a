// V8 flags the sidecar sets on itself at start, from its container's memory environment. Node refuses most V8 flags
// in NODE_OPTIONS (it would not start), so the ones the container needs beyond SIDECAR_NODE_OPTIONS come through
// LEVIATH_SIDECAR_V8_FLAGS and are set in process, before the first call is compiled. Only the flags listed here
// are taken: anything else in the variable is a usage error, never passed to V8.
import { setFlagsFromString } from "node:v8";
import { UsageError } from "./io.ts";

/** The variable that carries them (src/sandbox/pod-settings.ts sets it in the container). */
export const SIDECAR_V8_FLAGS_ENV = "LEVIATH_SIDECAR_V8_FLAGS";

/**
 * The flags the variable may name. `--no-maglev-destroy-on-background`: a finished Maglev compilation job is freed
 * on the main thread when it is installed, not queued for the one V8 worker; queued, the jobs' zones stayed live
 * together in that worker's malloc arena, 20 to 30 MiB of the peak RSS under load (docs/benchmarks.md).
 */
export const ALLOWED_SIDECAR_V8_FLAGS: readonly string[] = ["--no-maglev-destroy-on-background"];

/** The flags in the variable's value (space-separated), each one allowed; throws a UsageError naming one that is not. */
export function parseSidecarV8Flags(value: string | undefined): string[] {
  const flags = (value ?? "").split(/\s+/).filter((f) => f !== "");
  for (const flag of flags) {
    if (!ALLOWED_SIDECAR_V8_FLAGS.includes(flag)) {
      throw new UsageError(`${SIDECAR_V8_FLAGS_ENV}: '${flag}' is not a flag the sidecar sets (allowed: ${ALLOWED_SIDECAR_V8_FLAGS.join(", ")})`);
    }
  }
  return flags;
}

/** Sets the flags the environment names on this process's V8; returns them. */
export function applySidecarV8Flags(env: Readonly<Record<string, string | undefined>>): string[] {
  const flags = parseSidecarV8Flags(env[SIDECAR_V8_FLAGS_ENV]);
  for (const flag of flags) setFlagsFromString(flag);
  return flags;
}
