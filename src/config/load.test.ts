import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildMcpToolName } from "../policy/mcp-overrides.ts";
import { formatIssue } from "./load-error.ts";
import { loadAgent, loadPolicy, loadPolicyFiles } from "./load.ts";

const dir = mkdtempSync(join(tmpdir(), "leviath-load-"));
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe("loadPolicy", () => {
  it("maps config.toml and policy.toml onto a LeviathPolicy, keying per-agent tables by namespace/name", () => {
    const res = loadPolicy({ config: "test/fixtures/config/config.toml", policy: "test/fixtures/config/policy.toml", namespace: "team-a" }, buildMcpToolName);
    expect(res.ok).toBe(true);
    if (!res.ok) return;
    expect(res.value.readPaths).toEqual({ global: [], perAgent: { "team-a/cto": ["~/.leviath/runs"] }, allowBlueprintReadPaths: false });
    expect(res.value.toolPermissions).toEqual({ shell: "ask", web_fetch: "deny" });
    expect(res.value.taint.allowlist).toEqual([
      { tool: "send_email", to: ["*.example.com"], channel: [], maxSensitivity: "internal" },
      { tool: "http_post", to: ["https://hooks.internal/*"], channel: [], maxSensitivity: "public" },
    ]);
    expect(res.value.taint.toolOverrides).toEqual({ shell: { clearance: "internal" }, github__create_issue: { sensitivity: "internal", direction: "outbound" } });
  });

  it("reads a tool's declared target in policy.toml: an argument, a list of them, or a table with its kind", () => {
    const res = loadPolicy({ policy: file("p-targets.toml", [
      "[mcp_overrides.bank.tools.send_money]", "direction = 'outbound'", "target = 'recipient'",
      "[mcp_overrides.mail.tools.send_email]", "target = ['recipients', 'cc', 'bcc']",
      "[mcp_overrides.web.tools.post_webpage]", "target = { arguments = ['url'], kind = 'url_host' }",
      "[mcp_overrides.chat__post]", "target = 'channel'", "",
    ].join("\n")) }, buildMcpToolName);
    expect(res.ok && res.value.taint.toolOverrides).toEqual({
      bank__send_money: { direction: "outbound", target: { arguments: ["recipient"], kind: "value" } },
      mail__send_email: { target: { arguments: ["recipients", "cc", "bcc"], kind: "value" } },
      web__post_webpage: { target: { arguments: ["url"], kind: "url_host" } },
      chat__post: { target: { arguments: ["channel"], kind: "value" } },
    });
  });

  it("refuses a declared target on a built-in tool and a bad target, naming the field", () => {
    const builtin = loadPolicy({ policy: file("p-t2.toml", "[mcp_overrides.web_fetch]\ntarget = 'query'\n") }, buildMcpToolName);
    expect(!builtin.ok && builtin.issues.map((i) => [i.where, i.message])).toEqual([["taint.toolOverrides.web_fetch.target", "'web_fetch' is a built-in tool: its target is its own and cannot be declared"]]);
    const bad = loadPolicy({ policy: file("p-t3.toml", "[mcp_overrides.bank.tools.pay]\ntarget = { arguments = ['to'], kind = 'host' }\n") }, buildMcpToolName);
    expect(!bad.ok && bad.issues[0]?.where).toBe("taint.toolOverrides.bank__pay.target.kind");
  });

  it("maps [web_search] onto webSearch, and refuses a server the policy does not declare naming the field", () => {
    const servers = "[[mcp_servers]]\nname = 'files'\nurl = 'http://127.0.0.1:9/mcp'\n";
    const res = loadPolicy({ config: file("c-ws.toml", `${servers}[web_search]\nserver = 'files'\ntool = 'search_files'\nquery_argument = 'pattern'\narguments = { path = '/srv' }\n`) }, buildMcpToolName);
    expect(res.ok && res.value.webSearch).toEqual({ server: "files", tool: "search_files", queryArgument: "pattern", arguments: { path: "/srv" } });
    const bad = loadPolicy({ config: file("c-ws2.toml", `${servers}[web_search]\nserver = 'brave'\ntool = 'search'\n`) }, buildMcpToolName);
    expect(!bad.ok && bad.issues.map((i) => i.where)).toEqual(["webSearch.server"]);
  });

  it("reads taint_tracking at the top level of config.toml and warns about keys the operator ignores", () => {
    const res = loadPolicy({ config: file("c1.toml", "taint_tracking = true\n[security]\ncredential_store = 'keyring'\n") }, buildMcpToolName);
    expect(res.ok && res.value.security.taintTracking).toBe(true);
    expect(res.ok && res.warnings.map(formatIssue)).toEqual([`${dir}/c1.toml:3: [security] credential_store: not used by the operator; ignored`]);
  });

  it("refuses a bad permission value in config.toml, naming the key", () => {
    const res = loadPolicy({ config: file("c2.toml", "[tool_permissions]\nshell = 'sometimes'\n") }, buildMcpToolName);
    expect(res.ok).toBe(false);
    expect(!res.ok && res.issues[0]?.where).toBe("toolPermissions.shell");
  });

  it("reports a policy.toml syntax error the way upstream does, with the line", () => {
    const res = loadPolicy({ policy: file("p.toml", "[[allowlist]\ntool = 'x'\n") }, buildMcpToolName);
    expect(!res.ok && formatIssue(res.issues[0]!)).toMatch(/p\.toml:1:\d+: Failed to parse policy\.toml: invalid TOML/);
  });

  it("reads a LeviathPolicy YAML and a rules directory sorted by name", () => {
    const yaml = file("policy.yaml", "apiVersion: leviath.dev/v1alpha1\nkind: LeviathPolicy\nmetadata: {name: cluster}\nspec:\n  readPaths:\n    global: [/shared/runs]\n");
    const rules = mkdtempSync(join(dir, "rules-"));
    writeFileSync(join(rules, "b-ops.cel"), 'tool == "shell"\n');
    writeFileSync(join(rules, "a-mail.cel"), 'target.endsWith("@corp.example")\n');
    writeFileSync(join(rules, "notes.txt"), "ignored");
    const res = loadPolicy({ config: yaml, rules }, buildMcpToolName);
    expect(res.ok && res.value.readPaths.global).toEqual(["/shared/runs"]);
    expect(res.ok && res.value.taint.rules.map((r) => r.name)).toEqual(["a-mail", "b-ops"]);
  });

  it("refuses an unknown key in a LeviathPolicy YAML, naming it", () => {
    const yaml = file("bad.yaml", "apiVersion: leviath.dev/v1alpha1\nkind: LeviathPolicy\nmetadata: {name: cluster}\nspec:\n  readPath: {}\n");
    const res = loadPolicy({ config: yaml }, buildMcpToolName);
    expect(!res.ok && res.issues.map(formatIssue)).toEqual([`${dir}/bad.yaml: spec: unknown key 'readPath'`]);
  });

  it("tells a LeviathPolicy by content, takes it from a List and as policy, and names the syntax read", () => {
    const policy = "apiVersion: leviath.dev/v1alpha1\nkind: LeviathPolicy\nmetadata: {name: cluster, uid: x}\nspec:\n  toolPermissions: {shell: deny}\nstatus: {observedGeneration: 1}\n";
    const list = file("from-kubectl", `apiVersion: v1\nkind: List\nitems:\n${policy.split("\n").map((l, i) => (l === "" ? l : `${i === 0 ? "- " : "  "}${l}`)).join("\n")}`);
    const res = loadPolicyFiles({ config: list }, buildMcpToolName);
    expect(res.ok && { shell: res.value.spec.toolPermissions["shell"], format: res.value.format }).toEqual({ shell: "deny", format: "yaml" });
    const asPolicy = loadPolicyFiles({ policy: file("p-yaml.toml", policy) }, buildMcpToolName);
    expect(asPolicy.ok && { shell: asPolicy.value.spec.toolPermissions["shell"], format: asPolicy.value.format }).toEqual({ shell: "deny", format: "yaml" });
    const toml = loadPolicyFiles({ config: file("cfg", "[tool_permissions]\nshell = 'ask'\n") }, buildMcpToolName);
    expect(toml.ok && toml.value.format).toBe("toml");
  });

  it("refuses a LeviathPolicy beside a config, and two of them in one file", () => {
    const policy = "apiVersion: leviath.dev/v1alpha1\nkind: LeviathPolicy\nmetadata: {name: cluster}\nspec: {}\n";
    const beside = loadPolicy({ config: "test/fixtures/config/config.toml", policy: file("lp.yaml", policy) }, buildMcpToolName);
    expect(!beside.ok && beside.issues[0]?.message).toContain("give it alone");
    const two = loadPolicy({ config: file("two.yaml", `${policy}---\n${policy}`) }, buildMcpToolName);
    expect(!two.ok && two.issues[0]?.message).toBe("2 LeviathPolicy objects in the file; give one");
  });

  it("names a missing file", () => {
    const res = loadPolicy({ config: join(dir, "nope.toml") }, buildMcpToolName);
    expect(!res.ok && formatIssue(res.issues[0]!)).toBe(`${dir}/nope.toml: cannot read: no such file`);
  });
});

describe("loadAgent", () => {
  it("reads a directory holding agent.leviath and keys the agent by namespace/name", () => {
    const res = loadAgent("test/fixtures/agents/cto", "team-a");
    expect(res.ok && { key: res.value.key, name: res.value.name, format: res.value.format }).toEqual({ key: "team-a/cto", name: "cto", format: "toml" });
  });

  it("reads an Agent YAML and refuses a spec.agent.name that differs from metadata.name", () => {
    const ok = file("a.yaml", "apiVersion: leviath.dev/v1alpha1\nkind: Agent\nmetadata: {name: cto, namespace: team-a}\nspec:\n  readPaths: {allow: [/data]}\n");
    expect(loadAgent(ok).ok && (loadAgent(ok) as { value: { key: string } }).value.key).toBe("team-a/cto");
    const bad = file("b.yaml", "apiVersion: leviath.dev/v1alpha1\nkind: Agent\nmetadata: {name: intern}\nspec:\n  agent: {name: cto}\n");
    const res = loadAgent(bad);
    expect(!res.ok && res.issues[0]?.where).toBe("spec.agent.name");
  });

  it("picks the Agent out of several documents, and names the kinds a file holds instead", () => {
    const agent = "apiVersion: leviath.dev/v1alpha1\nkind: Agent\nmetadata: {name: cto, namespace: team-a}\nspec: {}\n";
    const res = loadAgent(file("ns-and-agent", `apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n${agent}`));
    expect(res.ok && { key: res.value.key, format: res.value.format }).toEqual({ key: "team-a/cto", format: "yaml" });
    const none = loadAgent(file("ns-only.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n"));
    expect(!none.ok && none.issues[0]?.message).toBe("no Agent in the file (it holds Namespace)");
  });
});
