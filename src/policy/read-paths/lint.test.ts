import { describe, expect, it } from "vitest";

import { formatFindingJson, type Finding } from "../../api/findings.ts";
import { computeReadPathFindings, isBroadReadPath, renderFinding } from "./lint.ts";
import { buildReadPathReport, type ReadPathReportResult } from "./report.ts";

const SEVERITY_ORDER = { error: 0, warning: 1, note: 2 } as const;

function reportFor(declared: string[], granted: string[], allowBlueprintReadPaths = false): ReadPathReportResult {
  const result = buildReadPathReport({ agentName: "cto", declared, granted, allowBlueprintReadPaths, workdir: "/space/run", home: "/home/me" });
  if (result === null) throw new Error("nothing declared");
  return result;
}

/** What `lev validate` prints: a stable sort by severity, then each finding rendered. */
function validateOutput(findings: Finding[]): string {
  return [...findings].sort((a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity]).map(renderFinding).join("\n");
}

describe("computeReadPathFindings (spec §8.5)", () => {
  it("prints the documented example (report-001)", () => {
    const declared = ["~/.leviath/runs", "glob:~/design-docs/**"];
    const findings = computeReadPathFindings({ declared, report: reportFor(declared, ["~/.leviath/runs"]) });
    expect(findings.map((f) => f.code)).toEqual(["read-paths-declared", "read-paths-not-granted"]);
    expect(validateOutput(findings)).toBe(
      [
        "  WARN your config does not grant glob:~/design-docs/**: reads matching them will be refused [read-paths-not-granted]",
        '       add to your config.toml: [agent_read_paths.cto] allow = ["glob:~/design-docs/**"]',
        "  NOTE declares [read_paths] (reads outside the run workdir): 2 declared, 1 granted [read-paths-declared]",
        "       ~/.leviath/runs: granted; glob:~/design-docs/**: NOT granted",
      ].join("\n"),
    );
  });

  it("uses the JSON shape with a null stage", () => {
    const declared = ["/a"];
    expect(computeReadPathFindings({ declared, report: reportFor(declared, ["/a"]) }).map(formatFindingJson)).toEqual([
      {
        severity: "note",
        code: "read-paths-declared",
        stage: null,
        message: "declares [read_paths] (reads outside the run workdir): 1 declared, 1 granted",
        fix: "/a: granted",
      },
    ]);
  });

  it("says so when the override grants everything", () => {
    const declared = ["/a", "/b"];
    const [note] = computeReadPathFindings({ declared, report: reportFor(declared, [], true) });
    expect(note?.fix).toBe("all granted by [security] allow_blueprint_read_paths = true");
  });

  it("replaces the report findings with the grant error", () => {
    const declared = ["/a"];
    expect(computeReadPathFindings({ declared, report: reportFor(declared, ["regex:"]) })).toEqual([
      {
        severity: "warning",
        code: "read-paths-grant-invalid",
        message: "read_paths grant in your config.toml: read_paths entry 'regex:': regex pattern is empty",
        fix: "fix the entry in your config.toml, or remove it",
      },
    ]);
  });

  it("states the rule when no config could be loaded", () => {
    expect(computeReadPathFindings({ declared: ["/a", "glob:/b/**"], report: "offline" })).toEqual([
      {
        severity: "note",
        code: "read-paths-declared",
        message: "declares [read_paths] (reads outside the run workdir): /a, glob:/b/**",
        fix: "these are refused unless your own config grants them",
      },
    ]);
  });

  it("appends one broad-read-path warning per broad entry, in declaration order, after any variant", () => {
    const declared = ["regex:/.*", "/data", "~/"];
    for (const report of ["offline" as const, reportFor(declared, ["regex:"]), reportFor(declared, ["/data"])]) {
      const broad = computeReadPathFindings({ declared, report }).filter((f) => f.code === "broad-read-path");
      expect(broad.map((f) => f.message)).toEqual([
        "read_paths entry 'regex:/.*' is very broad - it can match your entire home directory or any path on this machine",
        "read_paths entry '~/' is very broad - it can match your entire home directory or any path on this machine",
      ]);
      expect(broad.every((f) => f.severity === "warning" && f.fix === "name the directory it actually needs")).toBe(true);
    }
  });

  it("points its advice at the LeviathPolicy's fields when read against one", () => {
    const declared = ["/a", "glob:/b/**"];
    const findings = computeReadPathFindings({ declared, report: reportFor(declared, ["/a"]), advice: "LeviathPolicy", agentKey: "team-a/cto" });
    expect(findings.find((f) => f.code === "read-paths-not-granted")?.fix).toBe('add to spec.readPaths.perAgent of the LeviathPolicy: "team-a/cto": ["glob:/b/**"]');
    const invalid = computeReadPathFindings({ declared, report: reportFor(declared, ["regex:"]), advice: "LeviathPolicy", agentKey: "team-a/cto" });
    expect(invalid).toEqual([{
      severity: "warning", code: "read-paths-grant-invalid",
      message: "read_paths grant in the LeviathPolicy: read_paths entry 'regex:': regex pattern is empty",
      fix: "fix the entry in spec.readPaths of the LeviathPolicy, or remove it",
    }]);
    const all = computeReadPathFindings({ declared, report: reportFor(declared, [], true), advice: "LeviathPolicy" });
    expect(all[0]?.fix).toBe("all granted by spec.readPaths.allowBlueprintReadPaths: true of the LeviathPolicy");
  });

  it("quotes an agent name that is not a bare TOML key in the config.toml stanza", () => {
    const declared = ["/a"];
    const result = buildReadPathReport({ agentName: "Planner.Bot", declared, granted: [], allowBlueprintReadPaths: false, workdir: "/w", home: "/h" });
    const fix = computeReadPathFindings({ declared, report: result! }).find((f) => f.code === "read-paths-not-granted")?.fix;
    expect(fix).toBe('add to your config.toml: [agent_read_paths."Planner.Bot"] allow = ["/a"]');
  });

  it("has nothing to say when nothing is declared", () => {
    expect(computeReadPathFindings({ declared: [], report: "offline" })).toEqual([]);
  });
});

describe("isBroadReadPath", () => {
  it.each(["~", "~/", "/", "glob:**", "glob:/**", "regex:/.*", "regex:/.+", "glob:~\\", "glob:**/x", "regex:/.*x"])("flags %j", (entry) => {
    expect(isBroadReadPath(entry)).toBe(true);
  });

  // Not flagged, including the anchor-bypass regexes (report-026, report-033).
  it.each(["glob:~/**", "regex:~/.*", "glob:/*", "/home", "regex:/nothing)|(.*", "regex:/a)|(/b", "~/docs"])("does not flag %j", (entry) => {
    expect(isBroadReadPath(entry)).toBe(false);
  });
});

describe("renderFinding", () => {
  it("pads ERR to four columns and omits a missing fix line", () => {
    expect(renderFinding({ severity: "error", code: "x", message: "boom" })).toBe("  ERR  boom [x]");
  });
});
