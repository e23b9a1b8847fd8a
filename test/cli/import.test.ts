import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { leviath, repo } from "./run-cli.ts";

const tmp = mkdtempSync(join(tmpdir(), "leviath-import-"));
function file(name: string, text: string): string {
  const p = join(tmp, name);
  mkdirSync(join(p, ".."), { recursive: true });
  writeFileSync(p, text);
  return p;
}

describe("leviath import", () => {
  it("prints an Agent for an upstream blueprint", () => {
    const r = leviath(["import", repo("test/fixtures/agents/notes-digest/agent.leviath"), "--namespace", "team-a"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const obj = parse(r.stdout);
    expect(obj).toMatchObject({ apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "notes-digest", namespace: "team-a" } });
    expect(obj.spec.stages.map((s: { name: string }) => s.name)).toEqual(["survey", "digest"]);
    expect(obj.spec.stages[0].sandbox).toEqual({ kind: "container", image: "alpine:3", network: false });
    expect(obj.spec.readPaths).toEqual({ allow: ["glob:~/team-notes/**"] });
  });

  it("carries the blueprint's seeds across, agent- and stage-level, as written (the sidecar's /v1/seeds fences them)", () => {
    const r = leviath(["import", repo("test/fixtures/agents/seeded/agent.leviath"), "--namespace", "team-a"]);
    expect(r.status, r.stderr).toBe(0);
    const obj = parse(r.stdout);
    expect(obj.spec.blueprint.context.regions).toEqual({
      notes: { kind: "pinned", seed: { files: ["notes.md", "blueprint:prompts/intro.md"] } },
      docs: { seed: { glob: "docs/*.md" } },
    });
    expect(obj.spec.stages[0].runtime.context.regions.s.seed).toEqual({ rhai: "seed.rhai" });
  });

  it("prints a LeviathPolicy for config.toml and policy.toml, keying grants by namespace/name", () => {
    const r = leviath(["import", repo("test/fixtures/config/config.toml"), repo("test/fixtures/config/policy.toml"), "-n", "team-a"]);
    expect(r.status).toBe(0);
    const obj = parse(r.stdout);
    expect(obj).toMatchObject({ kind: "LeviathPolicy", metadata: { name: "cluster" } });
    expect(obj.spec.readPaths.perAgent).toEqual({ "team-a/cto": ["~/.leviath/runs"] });
    expect(obj.spec.taint.allowlist[0]).toEqual({ tool: "send_email", to: ["*.example.com"], channel: [], maxSensitivity: "internal" });
  });

  it("names the key and line of a bad blueprint and exits 1 without a stack trace", () => {
    const r = leviath(["import", repo("test/fixtures/invalid/netwrok.leviath")]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("netwrok.leviath:7: [stages.build.sandbox] has unknown key 'netwrok'");
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("refuses a name that is not a Kubernetes name unless --name is given", () => {
    const bad = leviath(["import", repo("test/fixtures/invalid/upper-name.leviath")]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("[agent] name: 'Planner_Bot' is not a valid Kubernetes name (lower-case letters, digits, '-' and '.'); pass --name planner-bot");
    const ok = leviath(["import", repo("test/fixtures/invalid/upper-name.leviath"), "--name", "planner-bot"]);
    expect(ok.status).toBe(0);
    expect(parse(ok.stdout).spec.agent.name).toBe("planner-bot");
  });

  it("is a usage error without a file, and names a missing file", () => {
    expect(leviath(["import"]).status).toBe(2);
    const r = leviath(["import", "/nonexistent/agent.leviath"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("/nonexistent/agent.leviath: cannot read: no such file");
  });

  it("says in one block, grouped by table, which upstream keys are not carried over, naming each once", () => {
    const config = file("config.toml", [
      'default_provider = "anthropic"', 'title = "x"', "[security]", 'read_paths = ["~/ref"]', "shell_env = []", "allowed_workdirs = []",
      "[limits]", "stall_timeout_secs = 5", "wedge_timeout_secs = 9", "mcp_idle_disconnect_secs = 60", "max_concurrent_tool = 2",
      "[webhook]", 'url = "http://x"',
    ].join("\n"));
    const r = leviath(["import", config]);
    expect(r.status).toBe(0);
    // Upstream's keys (allowed_workdirs, mcp_idle_disconnect_secs are not in its example), and a misspelling of one nothing here reads.
    expect(r.stderr).toBe([
      `warning: ${config}: 9 keys are not used by the operator and not carried over:`,
      "  top level  default_provider, title, webhook",
      "  [security] shell_env, allowed_workdirs",
      "  [limits]   stall_timeout_secs, wedge_timeout_secs, mcp_idle_disconnect_secs, max_concurrent_tool",
      "",
    ].join("\n"));
    expect(parse(r.stdout).spec.readPaths.global).toEqual(["~/ref"]);
  });

  it("reads a mount's :ro or :rw suffix as its mode, in config.toml and in a blueprint", () => {
    const config = file("mounts/config.toml", '[sandbox]\nkind = "container"\nmounts = ["/opt/toolchain:ro", "/srv/cache:rw", "/data"]\n');
    const policy = parse(leviath(["import", config]).stdout);
    expect(policy.spec.sandbox.mounts).toEqual([
      { path: "/opt/toolchain", readOnly: true }, { path: "/srv/cache", readOnly: false }, { path: "/data", readOnly: true },
    ]);
    const bp = file("mounts/bp/agent.leviath", '[agent]\nname = "tc"\n[sandbox]\nkind = "container"\nmounts = ["/opt/toolchain:ro", "/srv/cache:rw"]\n');
    const r = leviath(["import", bp]);
    expect(r.status).toBe(0);
    expect(parse(r.stdout).spec.sandbox.mounts).toEqual(["/opt/toolchain", "/srv/cache"]);
    expect(r.stderr).toContain("[sandbox] mounts: '/srv/cache:rw': a blueprint cannot make a mount writable; the admin's mount of /srv/cache decides");
  });

  it("carries a blueprint with tools/*.rhai and says the script tools do not run here; validate says the same", () => {
    const bp = file("scripted/agent.leviath", '[agent]\nname = "researcher"\n[stages.gather]\navailable_tools = ["web_search", "read_file"]\n');
    file("scripted/tools/web_search.rhai", "fn run(args) { args }\n");
    file("scripted/tools/web_fetch.rhai", "fn run(args) { args }\n");
    const r = leviath(["import", join(tmp, "scripted")]);
    expect(r.status).toBe(0);
    expect(parse(r.stdout).spec.stages[0].availableTools).toEqual(["web_search", "read_file"]);
    expect(r.stderr).toBe(`warning: ${bp}: ships Rhai script tools (tools/web_fetch.rhai, tools/web_search.rhai) that do not run here: the operator has no Rhai engine, so these tools exist only where an MCP server or the runtime image provides them\n`);
    const v = JSON.parse(leviath(["validate", join(tmp, "scripted"), "--json"]).stdout);
    expect(v.map((f: { code: string }) => f.code)).toContain("script-tools-not-run");
  });

  it("agrees with validate on names: validate warns about the name import refuses", () => {
    const v = leviath(["validate", repo("test/fixtures/invalid/upper-name.leviath"), "--json"]);
    expect(v.status).toBe(0);
    const finding = JSON.parse(v.stdout).find((f: { code: string }) => f.code === "agent-name-not-kubernetes");
    expect(finding).toMatchObject({ severity: "warning", message: expect.stringContaining("'Planner_Bot' is not a valid Kubernetes name") });
    expect(finding.fix).toContain("--name planner-bot");
  });
});
