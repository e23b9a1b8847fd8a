import { execFileSync } from "node:child_process";
import * as PromClient from "prom-client";
import { describe, expect, it } from "vitest";
import { Counter, Gauge, Histogram, Registry } from "./prom-core.ts";

// The classes are prom-client's own (the index re-exports these modules), and a process that makes the sidecar's
// metrics loads neither the index nor what only the index loads (@opentelemetry/api, the default metrics).
describe("prom-core", () => {
  it("exports the same classes as prom-client's index", () => {
    expect([Registry, Counter, Gauge, Histogram]).toEqual([PromClient.Registry, PromClient.Counter, PromClient.Gauge, PromClient.Histogram]);
    expect(Registry).toBe(PromClient.Registry);
    expect(Histogram).toBe(PromClient.Histogram);
  });

  it("serves the sidecar's metrics without loading prom-client's index or @opentelemetry/api", () => {
    const script = `
      import { createRequire } from "node:module";
      const { createSidecarMetrics } = await import(${JSON.stringify(new URL("./sidecar-metrics.ts", import.meta.url).href)});
      const text = await createSidecarMetrics().registry.metrics();
      const loaded = Object.keys(createRequire(import.meta.url).cache);
      console.log(JSON.stringify({
        served: text.includes("# TYPE "),
        index: loaded.some((f) => /prom-client[\\\\/]index\\.js$/.test(f)),
        otel: loaded.some((f) => f.includes("@opentelemetry")),
        registry: loaded.some((f) => /prom-client[\\\\/]lib[\\\\/]registry\\.js$/.test(f)),
      }));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", cwd: new URL("../..", import.meta.url).pathname });
    expect(JSON.parse(out)).toEqual({ served: true, index: false, otel: false, registry: true });
  });
});
