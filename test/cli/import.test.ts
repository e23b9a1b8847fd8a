import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { leviath, repo } from "./run-cli.ts";

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
    expect(r.stderr).toContain("netwrok.leviath:7: [stages.build.sandbox] netwrok: [stages.build.sandbox] has unknown key 'netwrok'");
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("refuses a name that is not a Kubernetes name unless --name is given", () => {
    const bad = leviath(["import", repo("test/fixtures/invalid/upper-name.leviath")]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("'Planner_Bot' is not a valid Kubernetes name");
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
});
