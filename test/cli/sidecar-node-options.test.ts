import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { basename, join } from "node:path";
import { SIDECAR_MEMORY_ENV, SIDECAR_NODE_OPTIONS } from "../../src/sandbox/pod-settings.ts";
import { leviath } from "./run-cli.ts";
import { makeTempDir, startSidecar } from "./sidecar-harness.ts";

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

  it("starts the real sidecar with the whole environment, the V8 flags it sets on itself included, and it decides", async () => {
    const root = makeTempDir("leviath-sidecar-v8-flags-");
    writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'flags'\n");
    writeFileSync(join(root, "a.txt"), "a\n");
    const sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--workdir", root, "--audit-dir", join(root, "..", `${basename(root)}-audit`)], { env: { ...SIDECAR_MEMORY_ENV, LEVIATH_HOME: root } });
    try {
      const r = await fetch(`${sc.url}/v1/tool-calls`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${sc.runtimeToken}` }, body: JSON.stringify({ id: "c1", tool: "read_file", args: { path: "a.txt" } }) });
      expect(((await r.json()) as { decision: string }).decision).toBe("allow");
    } finally {
      expect(await sc.stop()).toBe(0);
    }
    expect(sc.stderr()).not.toMatch(/"level":"(warn|error|fatal)"/);
  });

  it("refuses to start, naming it, when LEVIATH_SIDECAR_V8_FLAGS holds a flag it does not set", () => {
    const root = makeTempDir("leviath-sidecar-v8-flags-");
    writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'flags'\n");
    const r = leviath(["sidecar", "--agent", join(root, "agent.leviath"), "--workdir", root, "--listen", "127.0.0.1:0"], { env: { LEVIATH_HOME: root, LEVIATH_SIDECAR_V8_FLAGS: "--allow-natives-syntax" } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("LEVIATH_SIDECAR_V8_FLAGS: '--allow-natives-syntax' is not a flag the sidecar sets");
  });
});
