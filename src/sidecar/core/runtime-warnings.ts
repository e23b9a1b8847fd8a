// What the runtime says it does not honour (a stage key it ignores, a model setting it does not pass on, a routing
// flag that lets the model end the run early): kept by the sidecar while the run goes on, served on `/v1/status`
// and, in a cluster, written to the Run's `status.runtimeWarnings`, so `kubectl get -o yaml` shows them while the
// run is still running rather than only in its final message. Bounded: the first 32 distinct lines, each cut at
// 512 characters, and a count of the rest.

/** Most warnings kept (the Run status bound). */
export const MAX_RUNTIME_WARNINGS = 32;
/** Longest warning kept, in characters. */
export const MAX_RUNTIME_WARNING_CHARS = 512;

/** The runtime's warnings for this run. */
export class RuntimeWarnings {
  readonly #lines: string[] = [];
  #omitted = 0;

  /** Adds lines not already kept; returns how many were new. */
  add(lines: readonly string[]): number {
    let added = 0;
    for (const raw of lines) {
      const line = raw.length > MAX_RUNTIME_WARNING_CHARS ? `${raw.slice(0, MAX_RUNTIME_WARNING_CHARS - 1)}…` : raw;
      if (this.#lines.includes(line)) continue;
      if (this.#lines.length >= MAX_RUNTIME_WARNINGS) {
        this.#omitted++;
        continue;
      }
      this.#lines.push(line);
      added++;
    }
    return added;
  }

  list(): readonly string[] {
    return [...this.#lines];
  }

  /** Distinct lines beyond the bound. */
  get omitted(): number {
    return this.#omitted;
  }
}
