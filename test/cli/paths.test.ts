import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";

// A real tree: a home with granted and ungranted directories, symlinks in and out, a workdir.
let root: string;
let home: string;
let work: string;
let agent: string;
let config: string;

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "leviath-paths-")));
  home = join(root, "home");
  work = join(root, "work");
  mkdirSync(join(home, ".leviath", "runs", "r1"), { recursive: true });
  mkdirSync(join(home, "design-docs", ".hidden"), { recursive: true });
  mkdirSync(join(home, ".ssh"), { recursive: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(home, ".leviath", "runs", "r1", "log.txt"), "run log\n");
  writeFileSync(join(home, ".ssh", "id_ed25519"), "secret\n");
  writeFileSync(join(work, "notes.md"), "notes\n");
  symlinkSync(join(home, ".ssh"), join(home, ".leviath", "runs", "planted"));
  symlinkSync(join(home, ".leviath", "runs", "r1"), join(root, "outside-link"));
  symlinkSync(join(home, ".leviath", "runs", "r1"), join(work, "runs-link"));
  symlinkSync(join(root, "gone"), join(home, ".leviath", "runs", "dangling"));
  agent = join(root, "agent.leviath");
  writeFileSync(agent, "[agent]\nname = 'cto'\n[read_paths]\nallow = ['~/.leviath/runs', 'glob:~/design-docs/**']\n");
  config = join(root, "config.toml");
  writeFileSync(config, "[agent_read_paths.cto]\nallow = ['~/.leviath/runs', 'glob:~/design-docs/**']\n");
});

function test(path: string, extra: string[] = [], env: Record<string, string | undefined> = { LEVIATH_HOME: home }) {
  const r = leviath(["paths", "test", path, "--agent", agent, "--config", config, "--workdir", work, "--json", ...extra], { env });
  return { status: r.status, out: r.stdout ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}

describe("leviath paths test", () => {
  it("allows a granted file and reports the real path it opens", () => {
    const r = test(join(home, ".leviath/runs/r1/log.txt"));
    expect(r.status).toBe(0);
    expect(r.out).toMatchObject({ decision: "allow", code: "allowed", resolved: join(home, ".leviath/runs/r1/log.txt") });
  });

  it("allows inside the workdir without consulting the policy", () => {
    expect(test("notes.md").out).toMatchObject({ decision: "allow", code: "inside-workdir", open: join(work, "notes.md") });
  });

  it("refuses a symlink planted in a granted tree pointing at ~/.ssh, showing the real path", () => {
    const r = test(join(home, ".leviath/runs/planted/id_ed25519"));
    expect(r.status).toBe(1);
    expect(r.out).toMatchObject({ decision: "deny", code: "not-declared", resolved: join(home, ".ssh/id_ed25519") });
    expect(r.out.reason).toBe(`path '${join(home, ".leviath/runs/planted/id_ed25519")}' is outside the working directory and not in this agent's [read_paths]`);
  });

  it("allows a symlink from outside pointing into a granted tree, and one in the workdir", () => {
    expect(test(join(root, "outside-link/log.txt")).out).toMatchObject({ decision: "allow", resolved: join(home, ".leviath/runs/r1/log.txt") });
    expect(test("runs-link/log.txt").out).toMatchObject({ decision: "allow", code: "allowed" });
  });

  it("allows a dangling link and a file that does not exist yet under a granted root", () => {
    expect(test(join(home, ".leviath/runs/dangling")).out).toMatchObject({ decision: "allow" });
    expect(test(join(home, ".leviath/runs/r2/later.txt")).out).toMatchObject({ decision: "allow", resolved: join(home, ".leviath/runs/r2/later.txt") });
  });

  it("matches dotfiles under a glob and refuses the glob's own directory (dir/** is not dir)", () => {
    expect(test(join(home, "design-docs/.hidden")).out).toMatchObject({ decision: "allow" });
    expect(test(join(home, "design-docs")).out).toMatchObject({ decision: "deny", code: "not-declared" });
  });

  it("refuses '..' above '/' as unresolvable", () => {
    const up = "../".repeat(work.split("/").length + 1);
    expect(test(`${up}etc/passwd`).out).toMatchObject({ decision: "deny", code: "unresolvable", reason: `path '${up}etc/passwd' cannot be resolved` });
  });

  it("never lets a write tool leave the workdir, even into a granted tree", () => {
    const r = test(join(home, ".leviath/runs/r1/log.txt"), ["--tool", "write_file"]);
    expect(r.status).toBe(1);
    expect(r.out).toMatchObject({ decision: "deny", code: "outside-workdir" });
    expect(r.out.reason).toContain("would escape the working directory");
  });

  it("refuses when the declaration is granted to nobody, naming what to add", () => {
    writeFileSync(join(root, "empty.toml"), "");
    const r = leviath(["paths", "test", join(home, "design-docs/a.md"), "--agent", agent, "--config", join(root, "empty.toml"), "--workdir", work], { env: { LEVIATH_HOME: home } });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("(not-granted)");
    expect(r.stdout).toContain("add it under [agent_read_paths.cto] (or set allow_blueprint_read_paths = true under [security]) in your config.toml");
  });

  it("uses LEVIATH_HOME for '~', and an empty LEVIATH_HOME makes '~/x' mean '/x'", () => {
    expect(test(join(home, ".leviath/runs/r1/log.txt"), [], { LEVIATH_HOME: join(root, "elsewhere") }).out).toMatchObject({ decision: "deny" });
    expect(test(join(home, ".leviath/runs/r1/log.txt"), [], { LEVIATH_HOME: "" }).out).toMatchObject({ decision: "deny" });
  });

  it("exits 2 for a missing workdir, a non-file tool or an invalid grant", () => {
    expect(leviath(["paths", "test", "x", "--agent", agent, "--workdir", join(root, "nope")]).status).toBe(2);
    expect(leviath(["paths", "test", "x", "--agent", agent, "--workdir", work, "--tool", "shell"]).status).toBe(2);
    writeFileSync(join(root, "bad.toml"), "[security]\nread_paths = ['glob:/a/***']\n");
    const r = leviath(["paths", "test", "x", "--agent", agent, "--config", join(root, "bad.toml"), "--workdir", work]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("read_paths grant in your config.toml: read_paths entry 'glob:/a/***': invalid glob");
  });

  it("says when a declared or granted root does not exist on this machine, in the words of the files given", () => {
    // The shipped example's shape (examples/agent.yaml, examples/policy.yaml): a grant a volume backs in a Run.
    const mounted = join(root, "mounted-notes");
    const agentYaml = join(root, "agent.yaml");
    writeFileSync(agentYaml, `apiVersion: leviath.dev/v1alpha1\nkind: Agent\nmetadata: {name: notes, namespace: team}\nspec:\n  agent: {name: notes}\n  readPaths: {allow: [${mounted}]}\n`);
    const policyYaml = join(root, "policy.yaml");
    writeFileSync(policyYaml, `apiVersion: leviath.dev/v1alpha1\nkind: LeviathPolicy\nmetadata: {name: cluster}\nspec:\n  readPaths:\n    perAgent: {team/notes: [${mounted}]}\n    volumes: [{path: ${mounted}, volume: {configMap: {name: notes}}}]\n`);
    const ask = (cfg: string, extra: string[] = []) => leviath(["paths", "test", join(mounted, "a.md"), "--agent", agentYaml, "--config", cfg, "--workdir", work, "-n", "team", ...extra]);
    const missing = ask(policyYaml);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toContain(`  note: ${mounted} (declared), ${mounted} (granted) do not exist on this machine, and a root that cannot be resolved matches nothing`);
    expect(missing.stdout).toContain("(in a Run, the volume of spec.readPaths.volumes of the LeviathPolicy puts the files there)");
    const toml = join(root, "grant.toml");
    writeFileSync(toml, `[agent_read_paths."team/notes"]\nallow = ['${mounted}']\n`);
    expect(JSON.parse(ask(toml, ["--json"]).stdout)).toMatchObject({ code: "not-declared", note: expect.stringContaining("(where the agent runs, the directory must exist)") as unknown });
    mkdirSync(mounted);
    writeFileSync(join(mounted, "a.md"), "notes\n");
    const present = ask(policyYaml);
    expect(present.status, present.stdout).toBe(0);
    expect(ask(join(root, "config.toml")).stdout).not.toContain("note:");
  });

  it("prints a human answer without --json", () => {
    const r = leviath(["paths", "test", "notes.md", "--agent", repo("test/fixtures/agents/agent-only"), "--workdir", work]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`allowed: read_file 'notes.md' (inside-workdir)\n  opens: ${join(work, "notes.md")}\n`);
  });
});
