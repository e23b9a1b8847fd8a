import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { startControllerLoop } from "../controller/controller-loop.ts";
import { createWorkQueue } from "../controller/work-queue.ts";
import { KubeApiError } from "../kube/errors.ts";
import { createLogger } from "../log/logger.ts";
import { createControllerMetrics, RECONCILE_TIME_BUCKETS, WORKQUEUE_BUCKETS } from "./controller-metrics.ts";

/** One sample's value from the exposition, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("controller metrics", () => {
  it("use controller-runtime's names, labels and buckets, count terminal errors and panics, and pass promtool", async () => {
    const metrics = createControllerMetrics("leviath-operator");
    let now = 1_000;
    const clock = () => now;
    const queue = createWorkQueue({ baseDelayMs: 60_000, maxDelayMs: 60_000 }, (depth, added) => {
      metrics.queueDepth("run", depth);
      if (added) metrics.queueAdd("run");
    }, { nowMs: clock, waited: (s) => metrics.queueWait("run", s), worked: (s) => metrics.queueWork("run", s) });
    metrics.watchQueue("run", () => queue.inFlightStartedMs(), clock);
    metrics.maxWorkers("run", 1);
    let release: () => void = () => undefined;
    const failures: Record<string, unknown> = { "ns/invalid": new KubeApiError(422, "Invalid", "spec.x is invalid"), "ns/bug": new TypeError("x is undefined") };
    const loop = startControllerLoop({
      name: "run", queue, workers: 1, metrics, log: createLogger("silent"), newId: () => "id", monotonicMs: clock,
      reconcile: async (key) => {
        if (key === "ns/slow") await new Promise<void>((r) => (release = r));
        if (key in failures) throw failures[key];
        return {};
      },
    });
    queue.add("ns/slow");
    queue.add("ns/invalid");
    queue.add("ns/bug");
    await new Promise((r) => setImmediate(r));
    now += 5_000; // ns/slow has been worked on for 5 s and is still in flight; the other two have waited 5 s
    const during = await metrics.registry.metrics();
    expect(sample(during, 'workqueue_unfinished_work_seconds{controller="run",name="run"}')).toBe(5);
    expect(sample(during, 'workqueue_longest_running_processor_seconds{controller="run",name="run"}')).toBe(5);
    release();
    await new Promise((r) => setTimeout(r, 20));
    await loop.stop();
    const text = await metrics.registry.metrics();

    expect(sample(text, 'controller_runtime_reconcile_errors_total{controller="run"}')).toBe(2);
    expect(sample(text, 'controller_runtime_terminal_reconcile_errors_total{controller="run"}')).toBe(1);
    expect(sample(text, 'controller_runtime_reconcile_panics_total{controller="run"}')).toBe(1);
    expect(sample(text, 'leviath_reconcile_errors_total{controller="run",error_kind="invalid"}')).toBe(1);
    expect(sample(text, 'leviath_reconcile_errors_total{controller="run",error_kind="internal"}')).toBe(1);
    expect(sample(text, 'workqueue_adds_total{controller="run",name="run"}')).toBe(3);
    expect(sample(text, 'workqueue_work_duration_seconds_count{controller="run",name="run"}')).toBe(3);
    expect(sample(text, 'workqueue_work_duration_seconds_bucket{le="1",controller="run",name="run"}')).toBe(2);
    expect(sample(text, 'workqueue_queue_duration_seconds_count{controller="run",name="run"}')).toBe(3);
    expect(sample(text, 'workqueue_queue_duration_seconds_bucket{le="1",controller="run",name="run"}')).toBe(1);
    expect(sample(text, 'workqueue_queue_duration_seconds_bucket{le="10",controller="run",name="run"}')).toBe(3);
    expect(sample(text, 'workqueue_unfinished_work_seconds{controller="run",name="run"}')).toBe(0);
    expect(sample(text, 'controller_runtime_max_concurrent_reconciles{controller="run"}')).toBe(1);
    expect(text).toMatch(/^leviath_build_info\{version="\d+\.\d+\.\d+[^"]*",node_version="v\d+\.[^"]+"\} 1$/m);
    // The buckets are controller-runtime's and client-go's.
    expect(RECONCILE_TIME_BUCKETS).toHaveLength(40);
    expect(text).toContain('controller_runtime_reconcile_time_seconds_bucket{le="0.15",controller="run"}');
    expect(WORKQUEUE_BUCKETS[0]).toBe(1e-8);
    expect(WORKQUEUE_BUCKETS.at(-1)).toBe(1000);

    const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    expect(check.error, "promtool must be installed").toBeUndefined();
    expect(`${check.stdout}${check.stderr}`).toBe("");
    expect(check.status).toBe(0);
  });
});
