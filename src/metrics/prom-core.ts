// prom-client's registry and the three metric kinds the sidecar uses, required from their own files instead of the
// package's index. The index loads every default Node metric (and with them @opentelemetry/api), the push gateway
// client, the cluster aggregator and summaries: about 55 ms of CPU in a cold process against 5 for these four
// (process.cpuUsage, no code cache), on the path to the sidecar's listen (docs/benchmarks.md, "The cold start").
// The same modules the index re-exports, so the same classes: a registry made here and a metric made from the index
// are one library.
import { createRequire } from "node:module";
import type * as PromClient from "prom-client";

const requireProm = createRequire(import.meta.url);

export const Registry = requireProm("prom-client/lib/registry") as typeof PromClient.Registry;
export type Registry = PromClient.Registry;
export const Counter = requireProm("prom-client/lib/counter") as typeof PromClient.Counter;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export const Gauge = requireProm("prom-client/lib/gauge") as typeof PromClient.Gauge;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export const Histogram = requireProm("prom-client/lib/histogram") as typeof PromClient.Histogram;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;
