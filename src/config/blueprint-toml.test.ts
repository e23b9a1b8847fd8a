import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseBlueprintToml } from "./blueprint-toml.ts";
import { formatIssue } from "./load-error.ts";
import { parseTomlDoc } from "./toml-source.ts";

const fixture = (name: string) => `test/fixtures/agents/${name}/agent.leviath`;

function load(text: string, file = "agent.leviath") {
  const doc = parseTomlDoc(file, text);
  if (!doc.ok) return { ok: false as const, issues: [doc.issue] };
  return parseBlueprintToml(doc.doc);
}

function errors(text: string): string[] {
  const r = load(text);
  if (r.ok) throw new Error("expected the blueprint to be refused");
  return r.issues.map(formatIssue);
}

describe("parseBlueprintToml", () => {
  it("maps the complete example blueprint, keeping runtime keys verbatim", () => {
    const r = load(readFileSync(fixture("notes-digest"), "utf8"));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const spec = r.value;
    expect(spec.agent).toMatchObject({ name: "notes-digest", version: "1.0.0", entryStage: "survey" });
    expect(spec.stages.map((s) => s.name)).toEqual(["survey", "digest"]);
    expect(spec.stages[0]).toMatchObject({ availableTools: ["read_file", "list_dir", "shell"], sandbox: { kind: "container", image: "alpine:3", network: false } });
    expect(spec.stages[0]?.runtime).toMatchObject({ mode: "autonomous", max_iterations: 20, transitions: { digest: { hint: "Enough has been read to write the digest" } } });
    expect(spec.stages[1]?.runtime?.["transitions"]).toEqual({});
    expect(spec.readPaths?.allow).toEqual(["glob:~/team-notes/**"]);
    expect(spec.toolPermissions).toEqual({ read_file: "allow", list_dir: "allow", shell: "ask" });
    expect(spec.blueprint?.["context"]).toBeDefined();
  });

  it("accepts a blueprint with only [agent]", () => {
    const r = load("[agent]\nname = \"solo\"\n");
    expect(r.ok && r.value.stages).toEqual([]);
  });

  it("keeps the source order of stages, numeric names included", () => {
    const r = load("[agent]\nname='a'\n[stages.b]\n[stages.2]\n[stages.a]\n");
    expect(r.ok && r.value.stages.map((s) => s.name)).toEqual(["b", "2", "a"]);
  });

  it("refuses a file without [agent]", () => {
    expect(errors("[stages.x]\n")[0]).toContain("missing [agent] table");
  });

  it("names a misspelled sandbox key, its table and its line", () => {
    const e = errors("[agent]\nname = 'x'\n\n[stages.build.sandbox]\nkind = 'container'\nnetwrok = false\n");
    expect(e).toEqual([
      "agent.leviath:6: [stages.build.sandbox] has unknown key 'netwrok' (valid: kind, image, engine, network, mount, mounts, persist, on_unavailable)",
    ]);
  });

  it("refuses an unknown stage key with upstream's valid list", () => {
    const e = errors("[agent]\nname='x'\n[stages.s]\nsystem_promt = 'hi'\n");
    expect(e[0]).toMatch(/^agent.leviath:4: \[stages.s\] has unknown key 'system_promt' \(valid: accepts_messages, /);
  });

  it("refuses a wrong type instead of ignoring it", () => {
    expect(errors("[agent]\nname='x'\n[sandbox]\nnetwork = 'false'\n")).toEqual(["agent.leviath:4: [sandbox] network: 'network' must be a boolean"]);
  });

  it("refuses a bad permission value and an unknown kind, naming the allowed words", () => {
    expect(errors("[agent]\nname='x'\n[tool_permissions]\nshell = 'maybe'\n")[0]).toBe("agent.leviath:4: [tool_permissions] shell: invalid value for 'shell' (valid: allow, ask, deny)");
    expect(errors("[agent]\nname='x'\n[sandbox]\nkind = 'docker'\n")[0]).toContain("(valid: none, namespace, container, gvisor, microvm)");
  });

  it("refuses an unknown stage mode", () => {
    expect(errors("[agent]\nname='x'\n[stages.s]\nmode = 'wild'\n")[0]).toContain("unknown mode 'wild'");
  });

  it("accepts mount as an alias of mounts but not both", () => {
    const r = load("[agent]\nname='x'\n[sandbox]\nkind='container'\nmount=['/opt']\n");
    expect(r.ok && r.value.sandbox?.mounts).toEqual(["/opt"]);
    expect(errors("[agent]\nname='x'\n[sandbox]\nmount=['/a']\nmounts=['/a']\n")[0]).toContain("either 'mount' or 'mounts'");
  });

  it("refuses non-string read_paths entries with upstream's message", () => {
    expect(errors("[agent]\nname='x'\n[read_paths]\nallow = ['/a', 3]\n")[0]).toContain("[read_paths] allow entries must be strings, got: 3");
  });

  it("treats [read_paths] without allow as present but empty, and rejects unknown keys in it", () => {
    const r = load("[agent]\nname='x'\n[read_paths]\n");
    expect(r.ok && r.value.readPaths).toEqual({ allow: [] });
    expect(errors("[agent]\nname='x'\n[read_paths]\nalow = ['/a']\n")[0]).toContain("has unknown key 'alow' (valid: allow)");
  });

  it("refuses an entry stage that is not declared", () => {
    expect(errors("[agent]\nname='x'\nentry_stage='nope'\n[stages.a]\n")[0]).toContain("entry stage 'nope' is not a declared stage");
  });

  it("reports TOML syntax errors with line and column", () => {
    expect(errors("[agent]\nname = \n")[0]).toMatch(/^agent.leviath:2:\d+: invalid TOML: /);
  });

  it("turns a bare [security] on and keeps an explicit value", () => {
    const on = load("[agent]\nname='x'\n[security]\n");
    expect(on.ok && on.value.security).toEqual({});
    expect(errors("[agent]\nname='x'\n[security]\ntaint = true\n")[0]).toContain("has unknown key 'taint' (valid: taint_tracking)");
  });
});

describe("read_paths entry syntax at parse time", () => {
  it.each([
    ["regex:/nothing)|(.*", "regex escapes its anchors"],
    ["regex:.*", "regex entries must start with '/', a drive letter, or '~/'"],
    ["glob:/a/../b", "glob patterns cannot contain '.' or '..' components"],
    ["~oops", "only '~/' home expansion is supported"],
  ])("refuses %s", (entry, reason) => {
    const e = errors(`[agent]\nname='x'\n[read_paths]\nallow = ['/ok', '${entry}']\n`);
    expect(e).toHaveLength(1);
    expect(e[0]).toContain(`agent.leviath:4: [read_paths] allow: read_paths entry '${entry}': ${reason}`);
  });
});
