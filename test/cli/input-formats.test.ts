// One input format story: every command that reads a policy or an agent takes our YAML resources (a file, a
// multi-document stream, a `kind: List` as `kubectl get -o yaml` prints it) and upstream TOML alike, told apart by
// content (a `<(kubectl ...)` path has no extension), and '-' for stdin; advice follows the file given.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";

const POLICY_YAML = readFileSync(repo("examples/policy.yaml"), "utf8");
const AGENT_YAML = readFileSync(repo("examples/agent.yaml"), "utf8");
const CONFIG_TOML = repo("test/fixtures/config/config.toml");
const CTO = repo("test/fixtures/agents/cto");
const tmp = mkdtempSync(join(tmpdir(), "leviath-formats-"));
function file(name: string, text: string): string {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
}

/** The LeviathPolicy of examples/policy.yaml as `kubectl get leviathpolicy -o yaml` prints it: a List, with server fields. */
const POLICY_LIST = `apiVersion: v1
items:
- apiVersion: leviath.dev/v1alpha1
  kind: LeviathPolicy
  metadata:
    creationTimestamp: "2026-11-30T10:00:00Z"
    generation: 1
    name: cluster
    resourceVersion: "4711"
    uid: 0b7c6a4e-2f0e-4c1a-9d55-1d6f1c2a9e01
  spec:
${POLICY_YAML.split("\nspec:\n")[1]?.split("\n").map((l) => (l === "" ? l : `  ${l}`)).join("\n")}
  status:
    observedGeneration: 1
kind: List
metadata:
  resourceVersion: ""
`;

type Json = { code: string; fix: string | null }[];

describe("leviath input formats", () => {
  it("policy test reads a LeviathPolicy given as --policy (its spec.taint)", () => {
    const r = leviath(["policy", "test", "send_email", "--target", "ops.example.com", "--taint", "internal", "--policy", repo("examples/policy.yaml"), "--json"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: "allowed", source: "allowlist", rule: 1 });
  });

  it("validate reads an Agent from stdin '-', and a LeviathPolicy from stdin as --config", () => {
    const agent = leviath(["validate", "-", "--config", repo("examples/policy.yaml"), "--json"], { input: AGENT_YAML });
    expect(agent.status).toBe(0);
    expect((JSON.parse(agent.stdout) as Json).map((f) => f.code)).toContain("read-paths-not-granted");
    const policy = leviath(["validate", repo("examples/agent.yaml"), "--config", "-"], { input: POLICY_YAML });
    expect(policy.status).toBe(0);
    expect(policy.stdout).toContain("✓ Blueprint 'notes-digest' is valid.");
  });

  it("refuses '-' for two files at once, naming the flags", () => {
    const r = leviath(["validate", "-", "--config", "-"], { input: AGENT_YAML });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("stdin");
  });

  it("validate reads a kind: List as kubectl get -o yaml prints it, from a path without an extension", () => {
    const list = file("kubectl-get-policy", POLICY_LIST);
    const r = leviath(["validate", repo("examples/agent.yaml"), "--config", list, "--json"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const fixes = JSON.parse(r.stdout) as Json;
    expect(fixes.find((f) => f.code === "read-paths-not-granted")?.fix).toBe('add to spec.readPaths.perAgent of the LeviathPolicy: "leviath-sandbox/notes-digest": ["/data/finance"]');
  });

  it("validate picks the Agent out of a multi-document YAML", () => {
    const both = file("namespace-and-agent", `${readFileSync(repo("examples/namespace.yaml"), "utf8")}\n---\n${AGENT_YAML}`);
    const r = leviath(["validate", both]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("✓ Blueprint 'notes-digest' is valid.");
  });

  it("still reads upstream TOML, also from stdin and from a path without an extension", () => {
    const r = leviath(["validate", CTO, "--config", "-", "--json"], { input: readFileSync(CONFIG_TOML, "utf8") });
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain("LeviathPolicy");
    const bare = file("config-no-extension", readFileSync(CONFIG_TOML, "utf8"));
    const again = leviath(["validate", CTO, "--config", bare, "--json"]);
    expect(again.stdout).toBe(r.stdout);
    const blueprint = leviath(["validate", "-"], { input: readFileSync(join(CTO, "agent.leviath"), "utf8") });
    expect(blueprint.status).toBe(0);
    expect(blueprint.stdout).toContain("✓ Blueprint 'cto' is valid.");
  });

  it("gives advice in the syntax of a LeviathPolicy that came without an extension", () => {
    const r = leviath(["validate", repo("examples/agent.yaml"), "--config", "-", "--json"], { input: POLICY_YAML });
    const fixes = JSON.parse(r.stdout) as Json;
    expect(fixes.find((f) => f.code === "tool-permission-clamped")?.fix).toContain("spec.toolPermissions.web_fetch of the LeviathPolicy");
    expect(r.stdout).not.toContain("config.toml");
  });

  it("policy add to a LeviathPolicy says what to add to spec.taint.allowlist, in YAML, and leaves the file alone", () => {
    const policy = file("policy.yaml", POLICY_YAML);
    const r = leviath(["policy", "add", "http_post", "--target", "https://hooks/*", "--policy", policy]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("spec.taint.allowlist");
    expect(r.stderr).toContain("- tool: http_post");
    expect(r.stderr).toContain("maxSensitivity: internal");
    expect(readFileSync(policy, "utf8")).toBe(POLICY_YAML);
  });

  it("paths test gives its not-granted advice in the LeviathPolicy's fields", () => {
    const finance = mkdtempSync(join(tmpdir(), "leviath-finance-"));
    writeFileSync(join(finance, "q3.csv"), "q,amount\n");
    const agent = file("finance-agent.yaml", AGENT_YAML.replace("- /data/finance", `- ${finance}`));
    const workdir = mkdtempSync(join(tmpdir(), "leviath-workdir-"));
    const r = leviath(["paths", "test", join(finance, "q3.csv"), "--agent", agent, "--workdir", workdir, "--config", "-"], { input: POLICY_YAML });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("spec.readPaths.perAgent");
    expect(r.stdout).not.toContain("config.toml");
  });

  it("policy list names a LeviathPolicy from stdin as <stdin>", () => {
    const withRule = POLICY_YAML.replace("  taint:\n", '  taint:\n    rules:\n      - name: ops\n        expression: tool == "shell"\n');
    const r = leviath(["policy", "list", "--policy", "-"], { input: withRule });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("  1. send_email [max: internal] → *.example.com");
    expect(r.stdout).toContain("  - ops (LeviathPolicy <stdin>)");
  });

  it("import prints an Agent resource back checked and normalized, in its own namespace", () => {
    const r = leviath(["import", repo("examples/agent.yaml")]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(leviath(["import", repo("examples/agent.leviath"), "--namespace", "leviath-sandbox"]).stdout);
  });

  it("prints its version with --version and version", () => {
    const { version } = JSON.parse(readFileSync(repo("package.json"), "utf8")) as { version: string };
    for (const arg of ["--version", "version"]) {
      const r = leviath([arg]);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(`leviath ${version}\n`);
    }
  });
});
