import { execFileSync, execSync, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DECISION_SOURCES, DECISIONS, TOOL_CLASSES } from "../../src/metrics/sidecar-metrics.ts";
import { RUN_MODES } from "../../src/api/run-policy.ts";
import { answerAndWait, callTool, makeTempDir, scrapeMetrics, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// The sidecar's /metrics, checked by the real promtool (Debian's prometheus package, installed here when
// missing: `apt-get update && apt-get install -y --no-install-recommends prometheus`).
function ensurePromtool(): string {
  const found = spawnSync("sh", ["-c", "command -v promtool"], { encoding: "utf8" });
  if (found.status === 0) return found.stdout.trim();
  execSync("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus", { stdio: "inherit", timeout: 600_000 });
  return execFileSync("sh", ["-c", "command -v promtool"], { encoding: "utf8" }).trim();
}

let promtool: string;
let sc: SidecarProcess;
let root: string;

beforeAll(async () => {
  promtool = ensurePromtool();
  root = makeTempDir("leviath-sidecar-metrics-");
  mkdirSync(join(root, "work", "private"), { recursive: true });
  writeFileSync(join(root, "work", "notes.md"), "notes\n");
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'metrics'\n[security]\ntaint_tracking = true\n");
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nshell = 'allow'\nweb_fetch = 'deny'\n");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--metrics-listen", "127.0.0.1:0"]);
}, 600_000);

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

describe("sidecar metrics", () => {
  it("pass promtool check metrics after allows, denies, asks and answers", async () => {
    await callTool(sc, "shell", { command: "true" });
    await callTool(sc, "read_file", { path: "notes.md" });
    await callTool(sc, "read_file", { path: "/etc/hostname" });
    await callTool(sc, "web_fetch", { url: "https://example.com" });
    const ask = await callTool(sc, "shell", { command: "echo x" }, "m1");
    expect(ask.status).toBe(202);
    await answerAndWait(sc, "gate-m1", "m1", "deny");
    const text = await scrapeMetrics(sc);
    const check = spawnSync(promtool, ["check", "metrics"], { input: text, encoding: "utf8" });
    expect(check.stdout + check.stderr).toBe("");
    expect(check.status).toBe(0);
    expect(text).toContain("# TYPE leviath_sidecar_decision_duration_seconds histogram");
  });

  it("label values come only from closed sets (no paths, tools or run names)", async () => {
    const text = await scrapeMetrics(sc);
    const allowed: Record<string, readonly string[]> = {
      decision: DECISIONS, source: DECISION_SOURCES, tool_class: TOOL_CLASSES, mode: RUN_MODES,
      prompt: ["taint_gate", "tool_approval"], outcome: ["allowed", "denied", "expired", "exited", "timed_out", "capped", "failed"],
      result: ["success", "failure"], executor: ["local", "pod_exec"],
    };
    let seen = 0;
    for (const line of text.split("\n").filter((l) => l.startsWith("leviath_sidecar_"))) {
      for (const [, key, value] of line.matchAll(/(\w+)="([^"]*)"/g)) {
        if (key === "le") continue;
        expect(allowed[key!], `label ${key} in ${line}`).toBeDefined();
        expect(allowed[key!]).toContain(value);
        seen++;
      }
    }
    expect(seen).toBeGreaterThan(10);
    expect(text).not.toContain(root);
  });
});
