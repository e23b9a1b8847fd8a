import { describe, expect, it } from "vitest";

import { buildReadPathPolicy, buildSpawnWarning, isReadPathGrantActive, type ReadPathPolicyInput } from "./read-path-policy.ts";

const base: ReadPathPolicyInput = {
  agentName: "cto",
  declared: ["~/.leviath/runs", "glob:~/design-docs/**"],
  granted: [],
  allowBlueprintReadPaths: false,
  workdir: "/space/run",
  home: "/home/me",
};

function built(input: Partial<ReadPathPolicyInput>) {
  const result = buildReadPathPolicy({ ...base, ...input });
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe("buildReadPathPolicy", () => {
  it("is inactive when nothing is declared, without compiling the grants", () => {
    expect(buildReadPathPolicy({ ...base, declared: [], granted: ["glob:["] })).toEqual({ ok: true, value: null });
  });

  it("compiles both lists in order and keeps the override", () => {
    const policy = built({ granted: ["~/.leviath/runs"], allowBlueprintReadPaths: true });
    expect(policy?.declared.entries.map((e) => e.raw)).toEqual(base.declared);
    expect(policy?.granted.entries.map((e) => e.raw)).toEqual(["~/.leviath/runs"]);
    expect(policy?.allowBlueprintReadPaths).toBe(true);
    expect(policy?.agentName).toBe("cto");
  });

  it("prefixes a declaration error with the agent (err-024)", () => {
    expect(buildReadPathPolicy({ ...base, home: undefined })).toEqual({
      ok: false,
      error: "agent 'cto' [read_paths]: read_paths entry '~/.leviath/runs': no home directory resolved for '~' expansion",
    });
  });

  it("fails the spawn on an invalid grant, which was never parse-checked (err-025)", () => {
    expect(buildReadPathPolicy({ ...base, granted: ["/ok", "regex:relative"] })).toEqual({
      ok: false,
      error:
        "read_paths grant in your config.toml: read_paths entry 'regex:relative': regex entries must start with '/', a drive letter, or '~/'; use 'glob:' for workdir-relative patterns",
    });
  });

  it("fails the spawn on a relative glob climbing past the real workdir's root (err-023)", () => {
    const result = buildReadPathPolicy({ ...base, declared: ["glob:../../../x/**"], workdir: "/w" });
    expect(result.ok ? "" : result.error).toBe("agent 'cto' [read_paths]: read_paths entry 'glob:../../../x/**': relative pattern escapes the filesystem root");
  });
});

describe("isReadPathGrantActive (taint bump, spec §6 step 5)", () => {
  it.each([
    [[], [], false, false],
    [[], ["/x"], true, false], // inactive policy: nothing declared
    [["/x"], [], false, false],
    [["/x"], [], true, true], // the override counts
    [["/x"], ["/unrelated"], false, true], // "some grant exists", even one that covers nothing
  ])("declared %j, granted %j, override %s -> %s", (declared, granted, allowBlueprintReadPaths, expected) => {
    expect(isReadPathGrantActive(built({ declared, granted, allowBlueprintReadPaths }))).toBe(expected);
  });
});

describe("buildSpawnWarning (spec §6 step 3)", () => {
  it("fires when the grant list is empty and the override is off", () => {
    expect(buildSpawnWarning(built({}))).toBe(
      "agent 'cto' declares [read_paths] but nothing grants them; reads outside the workdir will be refused. To grant them, add to your config.toml either:\n" +
        "[security]\nallow_blueprint_read_paths = true\nor the specific paths:\n[agent_read_paths.cto]\n" +
        'allow = ["~/.leviath/runs", "glob:~/design-docs/**"]',
    );
  });

  it("stays silent under the override, with any grant, or when inactive", () => {
    expect(buildSpawnWarning(built({ allowBlueprintReadPaths: true }))).toBeNull();
    expect(buildSpawnWarning(built({ granted: ["/unrelated"] }))).toBeNull();
    expect(buildSpawnWarning(null)).toBeNull();
  });
});
