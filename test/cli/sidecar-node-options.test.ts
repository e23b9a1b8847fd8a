import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { SIDECAR_MEMORY_ENV, SIDECAR_NODE_OPTIONS } from "../../src/sandbox/pod-settings.ts";

// The sidecar container gets its V8 flags through NODE_OPTIONS, and Node refuses to start at all when one of
// them is not allowed there (`--single-threaded-gc is not allowed in NODE_OPTIONS`): the pod would crash-loop.
// So the real node binary is started with the container's memory environment, and V8 must have taken the flags.
describe("the sidecar container's memory environment", () => {
  it("starts the real node, which takes every flag", () => {
    const probe = "const v8 = require('node:v8'); process.stdout.write(JSON.stringify({ limit: v8.getHeapStatistics().heap_size_limit }))";
    const r = spawnSync(process.execPath, ["-e", probe], { env: { ...process.env, ...SIDECAR_MEMORY_ENV }, encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const { limit } = JSON.parse(r.stdout) as { limit: number };
    const oldSpace = Number(/--max-old-space-size=(\d+)/.exec(SIDECAR_NODE_OPTIONS)?.[1]);
    // The limit is the old space plus the young generation: a flag that was ignored would leave Node's default (GiBs).
    expect(limit / 1024 / 1024).toBeGreaterThanOrEqual(oldSpace);
    expect(limit / 1024 / 1024).toBeLessThan(oldSpace + 32);
  });

  it("runs one V8 worker thread, three fewer than Node's default", () => {
    // Threads of an idle node: the main thread, V8's workers, and Node's own (inspector, signal watcher).
    const threads = (env: Record<string, string>) => {
      const r = spawnSync(process.execPath, ["-e", "process.stdout.write(/Threads:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1])"], { env: { ...process.env, ...env }, encoding: "utf8" });
      expect(r.stderr).toBe("");
      return Number(r.stdout);
    };
    const { NODE_OPTIONS: _options, ...rest } = SIDECAR_MEMORY_ENV;
    expect(threads(SIDECAR_MEMORY_ENV)).toBe(threads({ ...rest, NODE_OPTIONS: SIDECAR_NODE_OPTIONS.replace("--v8-pool-size=1", "") }) - 3);
  });

  it("is refused by node when a flag is not allowed in NODE_OPTIONS (what the test above guards against)", () => {
    const r = spawnSync(process.execPath, ["-e", "0"], { env: { ...process.env, NODE_OPTIONS: `${SIDECAR_NODE_OPTIONS} --single-threaded-gc` }, encoding: "utf8" });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("is not allowed in NODE_OPTIONS");
  });
});
