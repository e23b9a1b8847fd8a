import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";

const CTO = repo("test/fixtures/agents/cto");
const CONFIG = repo("test/fixtures/config/config.toml");
const tmp = mkdtempSync(join(tmpdir(), "leviath-validate-"));
function file(name: string, text: string): string {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
}

describe("leviath validate", () => {
  it("prints the seed's example output for the cto agent", () => {
    const r = leviath(["validate", CTO, "--config", CONFIG]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe([
      "✓ Blueprint 'cto' is valid.",
      "  3 stages, version 1.0.0",
      "  WARN your config does not grant glob:~/design-docs/**: reads matching them will be refused [read-paths-not-granted]",
      '       add to your config.toml: [agent_read_paths.cto] allow = ["glob:~/design-docs/**"]',
      "  NOTE declares [read_paths] (reads outside the run workdir): 2 declared, 1 granted [read-paths-declared]",
      "       ~/.leviath/runs: granted; glob:~/design-docs/**: NOT granted",
      "",
    ].join("\n"));
  });

  it("prints findings as JSON and fails on warnings only with --deny-warnings", () => {
    const r = leviath(["validate", CTO, "--config", CONFIG, "--json"]);
    const findings = JSON.parse(r.stdout);
    expect(findings.map((f: { code: string }) => f.code)).toEqual(["read-paths-not-granted", "read-paths-declared"]);
    expect(findings[0]).toEqual({
      severity: "warning", code: "read-paths-not-granted", stage: null,
      message: "your config does not grant glob:~/design-docs/**: reads matching them will be refused",
      fix: 'add to your config.toml: [agent_read_paths.cto] allow = ["glob:~/design-docs/**"]',
    });
    expect(leviath(["validate", CTO, "--config", CONFIG, "--deny-warnings"]).status).toBe(1);
  });

  it("reports declarations as inert without a config (the offline variant)", () => {
    const r = leviath(["validate", CTO, "--json"]);
    expect(JSON.parse(r.stdout)).toEqual([{
      severity: "note", code: "read-paths-declared", stage: null,
      message: "declares [read_paths] (reads outside the run workdir): ~/.leviath/runs, glob:~/design-docs/**",
      fix: "these are refused unless your own config grants them",
    }]);
  });

  it("keys per-agent grants by namespace/name: another namespace's grant does not apply", () => {
    const policy = file("policy.yaml", [
      "apiVersion: leviath.dev/v1alpha1", "kind: LeviathPolicy", "metadata: {name: cluster}", "spec:",
      "  readPaths:", "    perAgent:", '      "team-a/cto": ["~/.leviath/runs", "glob:~/design-docs/**"]',
    ].join("\n"));
    const msg = (ns: string) => JSON.parse(leviath(["validate", CTO, "--config", policy, "-n", ns, "--json"]).stdout)[0].message;
    expect(msg("team-a")).toBe("declares [read_paths] (reads outside the run workdir): 2 declared, 2 granted");
    expect(msg("team-b")).toBe("your config does not grant ~/.leviath/runs, glob:~/design-docs/**: reads matching them will be refused");
  });

  it("warns about an invalid grant instead of failing, as upstream", () => {
    const cfg = file("bad-grant.toml", "[security]\nread_paths = ['regex:relative']\n");
    const r = leviath(["validate", CTO, "--config", cfg, "--json"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)[0]).toMatchObject({ severity: "warning", code: "read-paths-grant-invalid", fix: "fix the entry in your config.toml, or remove it" });
    expect(JSON.parse(r.stdout)[0].message).toMatch(/^read_paths grant in your config.toml: read_paths entry 'regex:relative': regex entries must start with/);
  });

  it("flags broad entries and always grants under allow_blueprint_read_paths", () => {
    const agent = file("broad.leviath", "[agent]\nname='broad'\n[read_paths]\nallow = ['~', 'glob:~/**', 'regex:/.*']\n");
    const cfg = file("override.toml", "[security]\nallow_blueprint_read_paths = true\n");
    const r = leviath(["validate", agent, "--config", cfg, "--json"]);
    const codes = JSON.parse(r.stdout).map((f: { code: string; message: string }) => `${f.code}: ${f.message}`);
    expect(codes).toEqual([
      "broad-read-path: read_paths entry '~' is very broad - it can match your entire home directory or any path on this machine",
      "broad-read-path: read_paths entry 'regex:/.*' is very broad - it can match your entire home directory or any path on this machine",
      "read-paths-declared: declares [read_paths] (reads outside the run workdir): 3 declared, 3 granted",
    ]);
  });

  it("refuses a blueprint whose regex escapes its anchors, exit 1, naming the entry and line", () => {
    const agent = file("escape.leviath", "[agent]\nname='sneaky'\n[read_paths]\nallow = ['regex:/nothing)|(.*']\n");
    const r = leviath(["validate", agent]);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain(`✗ Blueprint '${agent}' is invalid.`);
    expect(r.stdout).toContain(`ERR  ${agent}:4: [read_paths] allow: read_paths entry 'regex:/nothing)|(.*': regex escapes its anchors`);
    expect(r.stdout).toContain("[blueprint-invalid]");
  });

  it("refuses each regex Rust's regex refuses and RE2 would read otherwise, naming the entry and line", () => {
    const cases = [
      ["regex:/data(?i)*", "repetition operator missing expression"],
      ["regex:/data(?i){2}", "repetition operator missing expression"],
      ["regex:/data(?ii)", "duplicate flag"],
      ["regex:/(?P<1n>data)", "invalid capture group character"],
      ["regex:/[\\d-z]", "invalid range boundary, must be a literal"],
    ];
    for (const [entry, message] of cases) {
      const agent = file("rust-syntax.leviath", `[agent]\nname='rusty'\n[read_paths]\nallow = ['${entry}']\n`);
      const r = leviath(["validate", agent]);
      expect(r.status).toBe(1);
      expect(r.stdout).toContain(`ERR  ${agent}:4: [read_paths] allow: read_paths entry '${entry}': invalid regex: ${message}`);
    }
  });

  it("notes permissions the admin clamps and warns about an engine or a stage that drops the sandbox", () => {
    const agent = file("loose.leviath", [
      "[agent]", "name='loose'", "[tool_permissions]", "shell = 'allow'", "[sandbox]", "kind='container'", "engine='/tmp/payload'",
      "[stages.a]", "model = { models = [] }", "[stages.a.sandbox]", "network = false",
    ].join("\n"));
    const r = leviath(["validate", agent, "--config", CONFIG, "--json"]);
    expect(JSON.parse(r.stdout).map((f: { code: string; stage: string | null }) => [f.code, f.stage])).toEqual([
      ["sandbox-engine-ignored", null], ["sandbox-stage-opts-out", "a"], ["tool-permission-clamped", null],
    ]);
  });

  it("warns about tool names that name no tool, with the nearest one, in the syntax of each file", () => {
    const agent = file("typos.leviath", [
      "[agent]", "name='typos'", "[tool_permissions]", "read_fiel = 'ask'",
      "[stages.a]", "model = { models = [] }", "available_tools = ['shel', 'github__create_issue']",
    ].join("\n"));
    const admin = file("typos-config.toml", "[tool_permissions]\nweb_fetc = 'deny'\n");
    const r = leviath(["validate", agent, "--config", admin, "--json"]);
    expect(r.status).toBe(0);
    const found = (JSON.parse(r.stdout) as { code: string; message: string; fix: string }[]).filter((f) => f.code === "unknown-tool-name");
    expect(found.map((f) => f.fix)).toEqual([
      "write [tool_permissions] read_file instead", 'write [stages.a] available_tools[0] "shell" instead', "write [tool_permissions] web_fetch in your config.toml instead",
    ]);
    expect(leviath(["validate", agent, "--config", admin, "--deny-warnings"]).status).toBe(1);
    const policy = file("typos-policy.yaml", "apiVersion: leviath.dev/v1alpha1\nkind: LeviathPolicy\nmetadata: {name: cluster}\nspec:\n  toolPermissions: {web_fetc: deny}\n");
    const asPolicy = JSON.parse(leviath(["validate", agent, "--config", policy, "--json"]).stdout) as { code: string; message: string }[];
    expect(asPolicy.filter((f) => f.code === "unknown-tool-name").at(-1)?.message).toMatch(/^spec\.toolPermissions\.web_fetc of the LeviathPolicy: no tool is named 'web_fetc' \(did you mean 'web_fetch'\?\)/);
  });

  it("applies the policy's runtime ceilings as the controller does: kind, template, image, each an error naming the entry", () => {
    const agent = (runtime: string, image = "") => file(`runtime-${runtime.replace(/\W+/g, "-")}${image ? "-img" : ""}.yaml`, [
      "apiVersion: leviath.dev/v1alpha1", "kind: Agent", "metadata: {name: client, namespace: team-a}", "spec:",
      ...(image ? [`  image: ${image}`] : []), `  runtime: ${runtime}`,
      "  agent: {name: client, entryStage: work}",
      "  stages: [{name: work, runtime: {mode: output, model: {models: [{provider: anthropic, model: m}]}}}]",
    ].join("\n"));
    const policy = file("runtime-policy.yaml", [
      "apiVersion: leviath.dev/v1alpha1", "kind: LeviathPolicy", "metadata: {name: cluster}", "spec:",
      "  ceilings: {runtimeKinds: [mcp-command], runtimeImages: ['registry.internal/agents/*']}",
      "  runtimeTemplates: [{name: aider, provider: anthropic, command: [aider, --message, '{task}']}]",
    ].join("\n"));
    const errors = (path: string) => {
      const r = leviath(["validate", path, "--config", policy, "--json"]);
      return { status: r.status, errors: (JSON.parse(r.stdout) as { severity: string; code: string; message: string; fix: string }[]).filter((f) => f.severity === "error") };
    };
    expect(errors(agent("{kind: mcp-command, template: aider}"))).toEqual({ status: 0, errors: [] });
    expect(errors(agent("{kind: mcp-command, template: aidr}"))).toEqual({ status: 1, errors: [{
      severity: "error", code: "runtime-template-not-declared", message: "spec.runtime.template: runtime template 'aidr' is not declared by the LeviathPolicy (spec.runtimeTemplates; declared: aider)",
      fix: "change spec.runtime.template of the Agent, or the admin allows it in spec.runtimeTemplates of the LeviathPolicy", stage: null,
    }] });
    expect(errors(agent("{kind: codex}")).errors.map((f) => f.code)).toEqual(["runtime-kind-not-allowed"]);
    expect(errors(agent("{kind: mcp-command, template: aider}", "ghcr.io/other/agent:1")).errors[0]?.message).toMatch(/^spec\.image: runtime image 'ghcr\.io\/other\/agent:1' is not allowed by the LeviathPolicy \(spec\.ceilings\.runtimeImages/);
    // The text output says invalid, and without the policy nothing is refused (no ceilings are known).
    const refused = leviath(["validate", agent("{kind: mcp-command, template: aidr}"), "--config", policy]);
    expect(refused.stdout).toMatch(/^✗ Blueprint 'client' is invalid \(1 error\)\./);
    expect(leviath(["validate", agent("{kind: mcp-command, template: aidr}")]).status).toBe(0);
  });

  it("accepts a blueprint with only [agent] as one synthesised stage", () => {
    const r = leviath(["validate", repo("test/fixtures/agents/agent-only")]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("✓ Blueprint 'solo' is valid.\n  1 stage, version 0.1.0\n");
  });

  it("exits 2 for a missing file, an unreadable config and a bad flag", () => {
    expect(leviath(["validate", join(tmp, "nope.leviath")]).status).toBe(2);
    const r = leviath(["validate", CTO, "--config", join(tmp, "missing.toml")]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("missing.toml: cannot read: no such file");
    const flag = leviath(["validate", CTO, "--colour"]);
    expect(flag.status).toBe(2);
    expect(flag.stderr).toContain("Unknown option '--colour'");
  });

  it("names a TOML syntax error's line and column in the config", () => {
    const cfg = file("broken.toml", "[security]\nread_paths = [\n");
    const r = leviath(["validate", CTO, "--config", cfg]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/broken\.toml:\d+:\d+: invalid TOML/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
  it("points its advice at the kind of --config it was given, and the blueprint's own spelling", () => {
    const asPolicy = JSON.parse(leviath(["validate", repo("examples/agent.yaml"), "--config", repo("examples/policy.yaml"), "--json"]).stdout) as { code: string; fix: string | null }[];
    expect(asPolicy.find((f) => f.code === "read-paths-not-granted")?.fix).toBe('add to spec.readPaths.perAgent of the LeviathPolicy: "leviath-sandbox/notes-digest": ["/data/finance"]');
    expect(asPolicy.find((f) => f.code === "sandbox-image-clamped")?.fix).toBe("the admin sets it: spec.sandbox.image of the LeviathPolicy");
    expect(JSON.stringify(asPolicy)).not.toContain("config.toml");
    const asToml = JSON.parse(leviath(["validate", repo("examples/agent.yaml"), "--config", CONFIG, "--json"]).stdout) as { code: string; fix: string | null }[];
    expect(asToml.find((f) => f.code === "read-paths-not-granted")?.fix).toBe('add to your config.toml: [agent_read_paths.notes-digest] allow = ["/data/team-notes", "/data/finance"]');
  });
});
