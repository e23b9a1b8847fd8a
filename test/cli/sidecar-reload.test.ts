import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RunPolicySchema, type RunPolicy } from "../../src/api/run-policy.ts";
import { callTool, get, makeTempDir, metricValue, scrapeMetrics, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// Hot reload: a new grant takes effect without a restart; a policy that does not load keeps the last good one
// and says so (health, logs, metrics) until a good one arrives.
async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function runPolicy(declared: string[], granted: string[]): RunPolicy {
  return RunPolicySchema.parse({
    agent: { key: "default/reloader", name: "reloader" },
    stages: [{ name: "main", sandbox: { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" } }],
    entryStage: "main",
    launch: { mode: "interactive", allow: [] },
    toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
    readPaths: { declared, granted, allowBlueprintReadPaths: false },
    taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
    limits: { interactionTimeoutSeconds: 3600, shellTimeoutSeconds: 60 },
  });
}

const metrics = (sc: SidecarProcess) => scrapeMetrics(sc);

describe("hot reload of the mounted run policy", () => {
  it("follows a kubelet-style atomic swap, keeps the last good policy on a bad one, and recovers", async () => {
    const root = makeTempDir("leviath-sidecar-reload-");
    const granted = join(root, "shared");
    mkdirSync(granted);
    mkdirSync(join(root, "work"));
    writeFileSync(join(granted, "doc.md"), "shared doc\n");
    // The ConfigMap volume layout: run-policy.json -> ..data/run-policy.json, ..data -> a timestamped directory.
    const mount = join(root, "policy");
    let version = 0;
    const publish = (text: string) => {
      const dir = join(mount, `..v${++version}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "run-policy.json"), text);
      symlinkSync(`..v${version}`, join(mount, "..data_tmp"));
      renameSync(join(mount, "..data_tmp"), join(mount, "..data"));
    };
    publish(JSON.stringify(runPolicy([granted], [])));
    symlinkSync("..data/run-policy.json", join(mount, "run-policy.json"));
    const sc = await startSidecar([
      "--run-policy", join(mount, "run-policy.json"), "--run", "reloader", "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"),
      "--reload-interval-ms", "100", "--metrics-listen", "127.0.0.1:0",
    ]);
    const read = () => callTool(sc, "read_file", { path: join(granted, "doc.md") });
    expect((await read()).body).toMatchObject({ decision: "deny", code: "not-granted" });

    publish(JSON.stringify(runPolicy([granted], [granted])));
    expect((await until(read, (r) => r.status === 200)).body).toMatchObject({ decision: "allow", result: "shared doc\n" });

    publish("{ not json");
    const health = await until(() => get<{ policy: { ok: boolean; error?: string } }>(`${sc.url}/v1/healthz`), (h) => !h.body.policy.ok);
    expect(health.body.policy.error).toContain("not JSON");
    expect((await read()).body).toMatchObject({ decision: "allow" });
    expect(metricValue(await metrics(sc), "leviath_sidecar_policy_last_reload_success")).toBe(0);
    expect(metricValue(await metrics(sc), "leviath_sidecar_policy_reloads_total", { result: "failure" })).toBe(1);
    expect(sc.stderr()).toContain("run policy failed to load; keeping the last good one");

    publish(JSON.stringify({ ...runPolicy([granted], [granted]), launch: { mode: "sometimes" } }));
    const invalid = await until(() => get<{ policy: { ok: boolean; error?: string } }>(`${sc.url}/v1/healthz`), (h) => h.body.policy.error?.includes("launch.mode") === true);
    expect(invalid.body.policy.error).toContain("run-policy.json: launch.mode:");

    publish(JSON.stringify(runPolicy([granted], [])));
    expect((await until(read, (r) => r.status === 403)).body).toMatchObject({ code: "not-granted" });
    expect((await get<{ policy: { ok: boolean } }>(`${sc.url}/v1/healthz`)).body.policy).toEqual({ ok: true });
    expect(metricValue(await metrics(sc), "leviath_sidecar_policy_last_reload_success")).toBe(1);
    expect(await sc.stop()).toBe(0);
  }, 120_000); // several sidecar starts and waits: longer than 30 s on a loaded machine
});

describe("hot reload standalone", () => {
  it("picks up a grant added to config.toml, and keeps it when the file is broken, naming the line", async () => {
    const root = makeTempDir("leviath-sidecar-reload-sa-");
    mkdirSync(join(root, "home", "docs"), { recursive: true });
    mkdirSync(join(root, "work"));
    writeFileSync(join(root, "home", "docs", "a.md"), "doc a\n");
    writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'sa'\n[read_paths]\nallow = ['~/docs']\n");
    const config = join(root, "config.toml");
    writeFileSync(config, "[security]\ntaint_tracking = false\n");
    const sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", config, "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--reload-interval-ms", "100"], {
      env: { LEVIATH_HOME: join(root, "home") },
    });
    const read = () => callTool(sc, "read_file", { path: join(root, "home/docs/a.md") });
    expect((await read()).body.code).toBe("not-granted");
    writeFileSync(config, "[security]\ntaint_tracking = false\n[agent_read_paths.sa]\nallow = ['~/docs']\n");
    expect((await until(read, (r) => r.status === 200)).body.result).toBe("doc a\n");
    writeFileSync(config, "[security]\ntaint_tracking = false\n[agent_read_paths.sa]\nallow = ['~/docs'\n");
    await until(async () => sc.stderr(), (t) => t.includes("keeping the last good one"));
    expect(sc.stderr()).toContain(`${config}:`);
    expect((await read()).status).toBe(200);
    expect(await sc.stop()).toBe(0);
  }, 120_000); // several sidecar starts and waits: longer than 30 s on a loaded machine
});
