// Two upstream read-path behaviours (shared/spec/read-paths.md), checked on every surface a user meets:
// backslashes in `glob:` text are `/` on Linux too (§2.4, glob-035), and per-agent grant tables are keyed by
// the exact, case-sensitive agent name (§1.2), so `[agent_read_paths.CTO]` loads and grants nothing to `cto`.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { leviath } from "./run-cli.ts";
import { callTool, makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

let root: string;
let data: string;
let sc: SidecarProcess;
let agentFile: string;
let configFile: string;

beforeAll(async () => {
  root = makeTempDir("leviath-rp-upstream-");
  data = join(root, "data");
  mkdirSync(join(data, "runs"), { recursive: true });
  mkdirSync(join(data, "cto-only"), { recursive: true });
  mkdirSync(join(root, "work"));
  writeFileSync(join(data, "runs", "log.txt"), "run log\n");
  writeFileSync(join(data, "cto-only", "plan.txt"), "cto plan\n");
  agentFile = join(root, "agent.leviath");
  writeFileSync(agentFile, `[agent]\nname = "cto"\n[read_paths]\nallow = ["glob:${data}/runs/**", "${data}/cto-only"]\n`);
  // The machine-wide grant is written Windows-style; the per-agent table is for `CTO`, not `cto`.
  const backslashed = `${data}/runs/**`.replaceAll("/", "\\");
  configFile = join(root, "config.toml");
  writeFileSync(configFile, `[security]\nread_paths = ['glob:${backslashed}']\n[agent_read_paths.CTO]\nallow = ['${data}/cto-only']\n`);
  sc = await startSidecar(["--agent", agentFile, "--config", configFile, "--workdir", join(root, "work"), "--audit-dir", join(root, "audit")]);
});

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

describe("upstream read-path edge cases on a real sidecar", () => {
  it("grants /data/runs/** from glob:\\data\\runs\\** on Linux", async () => {
    const r = await callTool(sc, "read_file", { path: join(data, "runs", "log.txt") });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ decision: "allow", result: "run log\n" });
  });

  it("loads a config with [agent_read_paths.CTO] and grants nothing from it to the agent named cto", async () => {
    const target = join(data, "cto-only", "plan.txt");
    const r = await callTool(sc, "read_file", { path: target });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ decision: "deny", code: "not-granted" });
    expect(JSON.stringify(r.body)).not.toContain("cto plan");
  });
});

describe("leviath validate on the same files", () => {
  it("counts the backslash grant, reports the CTO table's entry as not granted, and says why the table is inert", () => {
    const r = leviath(["validate", agentFile, "--config", configFile]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`WARN your config does not grant ${data}/cto-only: reads matching them will be refused [read-paths-not-granted]`);
    expect(r.stdout).toContain("2 declared, 1 granted");
    expect(r.stdout).toContain(`glob:${data}/runs/**: granted`);
    expect(r.stderr).toContain("[agent_read_paths.CTO]: names no Kubernetes Agent ('CTO' is not a lower-case DNS name)");
  });

  it("applies the CTO table to a blueprint named exactly CTO", () => {
    const upper = join(root, "upper.leviath");
    writeFileSync(upper, `[agent]\nname = "CTO"\n[read_paths]\nallow = ["${data}/cto-only"]\n`);
    const r = leviath(["validate", upper, "--config", configFile, "--json"]);
    expect(r.status).toBe(0);
    const findings = JSON.parse(r.stdout) as { code: string; message: string }[];
    expect(findings.find((f) => f.code === "read-paths-declared")?.message).toBe("declares [read_paths] (reads outside the run workdir): 1 declared, 1 granted");
    // Upstream accepts the name; a cluster cannot, and validate says so as import would.
    expect(findings.map((f) => f.code)).toContain("agent-name-not-kubernetes");
  });

  it("accepts a LeviathPolicy whose perAgent key no Agent can have, and grants nothing from it", () => {
    const policy = join(root, "policy.yaml");
    writeFileSync(policy, [
      "apiVersion: leviath.dev/v1alpha1", "kind: LeviathPolicy", "metadata: {name: cluster}", "spec:",
      "  readPaths:", "    perAgent:", `      "default/CTO": ["${data}/cto-only"]`,
    ].join("\n"));
    const r = leviath(["validate", agentFile, "--config", policy, "--json"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)[0]).toMatchObject({ code: "read-paths-not-granted" });
  });
});
