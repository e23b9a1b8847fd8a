import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { canonicalizeForMatch } from "./canonicalize.ts";
import { compileEntry, compileReadPathSet, type CompileContext } from "./compile.ts";
import { decide } from "./decide.ts";
import { buildGrantStanza, buildReadPathReport, computeSamplePath, isLexicalMatch, type ReadPathReportInput } from "./report.ts";

const CTX: CompileContext = { workdir: "/space/run", home: "/home/me" };

function sample(raw: string, ctx: CompileContext = CTX): string | null {
  const compiled = compileEntry(raw, ctx);
  if (!compiled.ok) throw new Error(compiled.error);
  return computeSamplePath(compiled.value);
}

function report(input: Partial<ReadPathReportInput>) {
  const result = buildReadPathReport({ agentName: "cto", declared: [], granted: [], allowBlueprintReadPaths: false, ...CTX, ...input });
  if (result === null || !result.ok) throw new Error(`no report: ${JSON.stringify(result)}`);
  return result.report;
}

const statuses = (input: Partial<ReadPathReportInput>): string[] => report(input).entries.map((e) => `${e.raw}: ${e.label}`);

describe("sample paths (spec §8.2)", () => {
  it.each([
    ["/home/me/docs", "/home/me/docs"],
    ["../shared", "/space/run/../shared"], // exact: the compiled root, uncanonicalized
    ["glob:/data/**", "/data/_leviath_probe"],
    ["glob:/data/*/notes", "/data/_leviath_probe/notes"],
    ["glob:/data/log?", "/data/logx"],
    ["glob:/data/*.md", "/data/_leviath_probe.md"],
    ["glob:/data/notes", "/data/notes"],
    ["glob:/data/[abc]/x", null], // a class is never guessed at
    ["glob:/data/[*]", null],
    ["glob:/data/", "/data/"],
    ["regex:/data/archives/.*", "/data/archives/_leviath_probe"],
    ["regex:/data/archives", "/data/archives"],
    ["regex:/[a-z]+/x", null],
    ["regex:/data/x.*\\.md", null], // /data/_leviath_probe fails, /data/x fails
    ["regex:~/runs/.*", "/home/me/runs/_leviath_probe"],
  ])("%s -> %s", (raw, expected) => {
    expect(sample(raw)).toBe(expected);
  });

  it("has no sample for a tilde glob under a home that needed escaping", () => {
    expect(sample("glob:~/docs/**", { workdir: "/w", home: "/ho[me]" })).toBeNull();
  });
});

describe("lexical matching (spec §8.3)", () => {
  const grants = (entries: string[]) => {
    const set = compileReadPathSet(entries, CTX);
    if (!set.ok) throw new Error(set.error);
    return set.value;
  };

  it("covers an exact root and its subtree by components, with no filesystem", () => {
    const set = grants(["/definitely/not/here/"]);
    expect(isLexicalMatch(set, "/definitely/not/here")).toBe(true);
    expect(isLexicalMatch(set, "/definitely/not/here/x")).toBe(true);
    expect(isLexicalMatch(set, "/definitely/not/here-old")).toBe(false);
    expect(isLexicalMatch(set, "/definitely/not")).toBe(false);
  });

  it("lets a root of / cover every absolute path", () => {
    expect(isLexicalMatch(grants(["/"]), "/etc/passwd")).toBe(true);
  });

  it("matches globs and regexes as at run time", () => {
    const set = grants(["glob:/data/**", "regex:/logs/.*"]);
    expect(isLexicalMatch(set, "/data/x/y")).toBe(true);
    expect(isLexicalMatch(set, "/logs/today")).toBe(true);
    expect(isLexicalMatch(set, "/elsewhere/x")).toBe(false);
  });
});

describe("buildReadPathReport (spec §8.1)", () => {
  it("is silent when nothing is declared", () => {
    expect(buildReadPathReport({ agentName: "cto", declared: [], granted: ["glob:["], allowBlueprintReadPaths: false, ...CTX })).toBeNull();
  });

  it("reports the documented example (report-001)", () => {
    const r = report({ declared: ["~/.leviath/runs", "glob:~/design-docs/**"], granted: ["~/.leviath/runs"] });
    expect(r.summary).toBe("2 declared, 1 granted");
    expect([r.declared, r.granted]).toEqual([2, 1]);
    expect(r.ungranted).toEqual(["glob:~/design-docs/**"]);
    expect(r.hasUngranted).toBe(true);
    expect(buildGrantStanza(r)).toEqual(["[agent_read_paths.cto]", 'allow = ["glob:~/design-docs/**"]']);
  });

  it("grants everything under the override, even with no grant list", () => {
    const r = report({ declared: ["/a", "regex:/[a-z]+/x"], allowBlueprintReadPaths: true });
    expect(r.summary).toBe("2 declared, 2 granted");
    expect(buildGrantStanza(r)).toEqual([]);
  });

  it("marks everything NOT granted when the grant list is empty, even uncheckable entries (report-023)", () => {
    expect(statuses({ declared: ["regex:/[a-z]+/x", "/a"] })).toEqual(["regex:/[a-z]+/x: NOT granted", "/a: NOT granted"]);
  });

  it("is the grant error when the grants do not compile, even under the override (report-024)", () => {
    const result = buildReadPathReport({ agentName: "cto", declared: ["/a"], granted: ["glob:"], allowBlueprintReadPaths: true, ...CTX });
    expect(result).toEqual({ ok: false, error: "read_paths grant in your config.toml: read_paths entry 'glob:': glob pattern is empty" });
  });

  it("leaves uncheckable entries out of the ungranted list (report-009, report-019, report-022)", () => {
    const r = report({ declared: ["regex:/[a-z]+/x", "glob:/d/[ab]", "~/x", "/b"], granted: ["/a"], home: undefined });
    expect(r.entries.map((e) => e.status)).toEqual(["Undetermined", "Undetermined", "Undetermined", "NotGranted"]);
    expect(r.entries[0]?.label).toBe("cannot be checked from the pattern alone");
    expect(r.ungranted).toEqual(["/b"]);
    expect(r.summary).toBe("4 declared, 0 granted");
  });

  it.each([
    // declared, grant, status — each disagrees with run time on purpose (spec §8.4)
    ["../shared", "/space/shared", "NOT granted"], // report-014: compared as text
    ["/data", "glob:/data/**", "NOT granted"], // report-011: sample /data is not /data/**
    ["glob:/data/**", "regex:/data/[a-z]+", "NOT granted"], // report-018: the probe has _
    ["/data", "/data/runs", "NOT granted"], // report-027
    ["/data/runs", "/data", "granted"],
    ["glob:/data/runs/**", "/data", "granted"],
  ])("declared %s, granted %s -> %s", (declared, granted, label) => {
    expect(statuses({ declared: [declared], granted: [granted] })).toEqual([`${declared}: ${label}`]);
  });

  it("really does diverge from enforcement for report-014 (run time allows)", () => {
    const root = fs.realpathSync.native(fs.mkdtempSync(path.join(os.tmpdir(), "read-paths-report-")));
    try {
      fs.mkdirSync(path.join(root, "run"));
      fs.mkdirSync(path.join(root, "shared"));
      const ctx = { workdir: path.join(root, "run"), home: undefined };
      const declared = compileReadPathSet(["../shared"], ctx);
      const granted = compileReadPathSet([path.join(root, "shared")], ctx);
      if (!declared.ok || !granted.ok) throw new Error("did not compile");
      const realFs = { realpath: (p: string) => fs.realpathSync.native(p) };
      const canonical = canonicalizeForMatch(path.join(root, "shared/doc.md"), realFs) ?? "";
      const policy = { agentName: "cto", declared: declared.value, granted: granted.value, allowBlueprintReadPaths: false };
      expect(decide(policy, canonical, realFs)).toBe("Allowed");
      expect(statuses({ declared: ["../shared"], granted: [path.join(root, "shared")], ...ctx })).toEqual(["../shared: NOT granted"]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
