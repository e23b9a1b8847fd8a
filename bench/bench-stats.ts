// Percentiles and a small table printer for the benchmarks.

/** Latency summary of a sample in microseconds. */
export interface LatencySummary {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** Summarises nanosecond samples as microseconds (nearest-rank percentiles). */
export function summarize(samplesNs: readonly number[] | Float64Array): LatencySummary {
  const sorted = Float64Array.from(samplesNs).sort();
  const at = (q: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]! / 1000);
  return { n: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: sorted.length === 0 ? NaN : sorted[sorted.length - 1]! / 1000 };
}

/** A row of the printed table. */
export interface Row {
  readonly name: string;
  readonly summary: LatencySummary;
  readonly target?: string;
  readonly note?: string;
  /** Decisions or calls per second, when the row measured a rate. */
  readonly perSecond?: number;
}

/** Microseconds as a short human figure (µs below a millisecond, ms up to ten seconds, then s). */
export function formatMicros(us: number): string {
  if (!Number.isFinite(us)) return "–";
  if (us >= 10_000_000) return `${(us / 1e6).toFixed(1)} s`;
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`;
}

/** A rate with thousands separators. */
export function formatRate(perSecond: number | undefined): string {
  return perSecond === undefined ? "" : Math.round(perSecond).toLocaleString("en-US");
}

/** Prints rows as a Markdown table (pasteable into docs/benchmarks.md). */
export function printTable(title: string, rows: readonly Row[]): void {
  const withRate = rows.some((r) => r.perSecond !== undefined);
  process.stdout.write(`\n### ${title}\n\n| What | n | p50 | p90 | p99 | p99.9 | max |${withRate ? " per second |" : ""} target | note |\n`);
  process.stdout.write(`|---|---|---|---|---|---|---|${withRate ? "---|" : ""}---|---|\n`);
  for (const r of rows) {
    const s = r.summary;
    const rate = withRate ? ` ${formatRate(r.perSecond)} |` : "";
    process.stdout.write(`| ${r.name} | ${s.n} | ${formatMicros(s.p50)} | ${formatMicros(s.p90)} | ${formatMicros(s.p99)} | ${formatMicros(s.p999)} | ${formatMicros(s.max)} |${rate} ${r.target ?? ""} | ${r.note ?? ""} |\n`);
  }
}

/** Times `fn` once per iteration after a warm-up, in nanoseconds per call. */
export function timeEach(iterations: number, fn: (i: number) => void): Float64Array {
  for (let i = 0; i < Math.min(2000, iterations); i++) fn(i);
  const out = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    fn(i);
    out[i] = Number(process.hrtime.bigint() - t0);
  }
  return out;
}

/** Calls per second of `fn` in a tight loop for about `ms` milliseconds (no per-call clock reads). */
export function measureRate(ms: number, fn: (i: number) => void): number {
  let i = 0;
  const start = performance.now();
  const end = start + ms;
  while (performance.now() < end) {
    // Read the clock once per batch of 100 so the clock itself does not dominate fast decisions.
    for (let k = 0; k < 100; k++) fn(i++);
  }
  return i / ((performance.now() - start) / 1000);
}
