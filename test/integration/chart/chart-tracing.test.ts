import { describe, expect, it } from "vitest";
import { findManifest, parseManifests, renderChart, renderChartResult, type Manifest } from "./chart-harness.ts";

// The chart's tracing values (issue 43): off by default, passed to the controller as its flags when an endpoint is
// set, and an endpoint that is no http(s) URL refused by the values schema, naming the key.
const NS = "leviath-system";
const controllerArgs = (ms: Manifest[]) => (findManifest(ms, "Deployment") as Manifest & { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args;

describe("the chart's tracing values", () => {
  it("pass tracing.endpoint and tracing.content to the controller only when an endpoint is set", async () => {
    expect(controllerArgs(parseManifests(await renderChart("leviath-operator", NS))).filter((a) => a.includes("otlp") || a.includes("trace-content"))).toEqual([]);
    const on = controllerArgs(parseManifests(await renderChart("leviath-operator", NS, ["--set", "tracing.endpoint=http://otel-collector.observability:4318,tracing.content=none"])));
    expect(on).toEqual(expect.arrayContaining(["--otlp-traces-endpoint=http://otel-collector.observability:4318", "--trace-content=none"]));
  });

  it("refuse an endpoint that is no http(s) URL, and a content level that is no level", async () => {
    for (const set of ["tracing.endpoint=otel-collector:4318", "tracing.content=secret"]) {
      const bad = await renderChartResult(["--set", set]);
      expect(bad.exitCode).not.toBe(0);
      expect(bad.stderr).toContain(`/${set.split("=")[0]!.replace(".", "/")}`);
    }
  });
});
