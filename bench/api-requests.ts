// The kube-apiserver's own count of the requests it served (`apiserver_request_total` on its /metrics), read before
// and after a bench mode: how many of each verb on each resource a Run cost, the bench's own requests included (its
// Run and PersistentVolume created, the Run deleted, its watches, the pool's readiness read).
import type { BenchKube } from "./bench-kube.ts";

/** Requests served, by `VERB resource[/subresource]`. */
export type RequestCounts = Record<string, number>;

/** The counts in a /metrics text (every code and scope summed per verb and resource). */
export function parseRequestCounts(metrics: string): RequestCounts {
  const counts: RequestCounts = {};
  for (const line of metrics.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (!labels["verb"] || !labels["resource"] || !Number.isFinite(value)) continue;
    const key = `${labels["verb"]} ${labels["resource"]}${labels["subresource"] ? `/${labels["subresource"]}` : ""}`;
    counts[key] = (counts[key] ?? 0) + value;
  }
  return counts;
}

/** What was served between two readings, per Run, largest first; and the writes (POST, PUT, PATCH, DELETE) alone. */
export function computeRequestsPerRun(before: RequestCounts, after: RequestCounts, runs: number): { perRun: Record<string, number>; writesPerRun: number } {
  const rows = Object.keys(after).map((k) => [k, ((after[k] ?? 0) - (before[k] ?? 0)) / runs] as const).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  const writesPerRun = rows.filter(([k]) => /^(POST|PUT|PATCH|DELETE|APPLY|CREATE|UPDATE) /.test(k)).reduce((sum, [, v]) => sum + v, 0);
  return { perRun: Object.fromEntries(rows.map(([k, v]) => [k, Math.round(v * 100) / 100])), writesPerRun: Math.round(writesPerRun * 100) / 100 };
}

/** Reads the API server's counts now. */
export async function readRequestCounts(kube: BenchKube): Promise<RequestCounts> {
  return parseRequestCounts(await kube.text("/metrics"));
}
