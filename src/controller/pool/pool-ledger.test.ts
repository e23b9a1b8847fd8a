import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { createControllerMetrics } from "../../metrics/controller-metrics.ts";
import { createPoolLedger } from "./pool-ledger.ts";

const sample = (text: string, series: string) => Number(text.split("\n").find((l) => l.startsWith(`${series} `))?.split(" ")[1]);

describe("createPoolLedger", () => {
  it("counts adoptions and misses per pool and as metrics, with every series present from the start, and passes promtool", async () => {
    const metrics = createControllerMetrics();
    const before = await metrics.registry.metrics();
    expect(sample(before, "leviath_pool_adoptions_total")).toBe(0);
    expect(sample(before, 'leviath_pool_misses_total{reason="claim-conflict"}')).toBe(0);
    expect(sample(before, 'leviath_pool_pods{state="ready"}')).toBe(0);
    const ledger = createPoolLedger(metrics);
    ledger.adopted("a/one");
    ledger.adopted("a/one");
    ledger.missed("a/one", "no-ready-pod");
    ledger.missed("b/two", "not-eligible");
    ledger.pods({ ready: 3, starting: 1 });
    expect(ledger.counts("a/one")).toEqual({ adoptions: 2, misses: 1 });
    expect(ledger.counts("b/two")).toEqual({ adoptions: 0, misses: 1 });
    expect(ledger.counts("c/none")).toEqual({ adoptions: 0, misses: 0 });
    const text = await metrics.registry.metrics();
    expect(sample(text, "leviath_pool_adoptions_total")).toBe(2);
    expect(sample(text, 'leviath_pool_misses_total{reason="no-ready-pod"}')).toBe(1);
    expect(sample(text, 'leviath_pool_misses_total{reason="not-eligible"}')).toBe(1);
    expect(sample(text, 'leviath_pool_pods{state="ready"}')).toBe(3);
    expect(sample(text, 'leviath_pool_pods{state="starting"}')).toBe(1);
    // Time to refill: each adoption since the pool was last full, observed when it is full again.
    expect(sample(text, "leviath_pool_refill_seconds_count")).toBe(0);
    const timed = createPoolLedger(metrics, () => 10_000);
    timed.adopted("c/three");
    timed.adopted("c/three", 12_000);
    expect(timed.lastAdoption("c/three")).toBe(12_000);
    expect(timed.lastAdoption("d/none")).toBeUndefined();
    timed.full("c/three", 14_000);
    timed.full("c/three", 20_000);
    const refilled = await metrics.registry.metrics();
    expect(sample(refilled, "leviath_pool_refill_seconds_count")).toBe(2);
    expect(sample(refilled, "leviath_pool_refill_seconds_sum")).toBe(6);
    const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    expect(check.error, "promtool must be installed").toBeUndefined();
    expect(`${check.stdout}${check.stderr}`).toBe("");
    expect(spawnSync("promtool", ["check", "metrics"], { input: refilled, encoding: "utf8" }).stdout).toBe("");
  });
});
