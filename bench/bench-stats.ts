// Percentiles and a small table printer for the benchmarks.

/** Latency summary of a sample in microseconds. */
export interface LatencySummary {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Summarises nanosecond samples as microseconds (nearest-rank percentiles). */
export function summarize(samplesNs: readonly number[] | Float64Array): LatencySummary {
  const sorted = Float64Array.from(samplesNs).sort();
  const at = (q: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! / 1000);
  return { n: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted.length === 0 ? NaN : sorted[sorted.length - 1]! / 1000 };
}

/** A row of the printed table. */
export interface Row {
  readonly name: string;
  readonly summary: LatencySummary;
  readonly target?: string;
  readonly note?: string;
}

const fmt = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`);

/** Prints rows as a Markdown table (pasteable into docs/benchmarks.md). */
export function printTable(title: string, rows: readonly Row[]): void {
  process.stdout.write(`\n### ${title}\n\n| What | n | p50 | p90 | p99 | max | target | note |\n|---|---|---|---|---|---|---|---|\n`);
  for (const r of rows) {
    const s = r.summary;
    process.stdout.write(`| ${r.name} | ${s.n} | ${fmt(s.p50)} | ${fmt(s.p90)} | ${fmt(s.p99)} | ${fmt(s.max)} | ${r.target ?? ""} | ${r.note ?? ""} |\n`);
  }
}
