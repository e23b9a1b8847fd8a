import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { PathFs } from "./canonicalize.ts";
import { buildReadPathPolicy } from "./read-path-policy.ts";
import { resolveRead, resolveWrite, type PathResolution, type ResolveContext } from "./resolve.ts";

const realFs: PathFs = { realpath: (p) => fs.realpathSync.native(p) };

// Canonical temp root (os.tmpdir() may be a symlink). W is the run's canonical workdir.
let T = "";
let W = "";

beforeAll(() => {
  T = fs.realpathSync.native(fs.mkdtempSync(path.join(os.tmpdir(), "read-paths-resolve-")));
  W = path.join(T, "work");
  for (const dir of ["work/sub", "data/runs/r1", "etc", "outside", "shared"]) fs.mkdirSync(path.join(T, dir), { recursive: true });
  for (const file of ["work/file.txt", "data/runs/r1/log.txt", "etc/secret", "shared/doc.md"]) fs.writeFileSync(path.join(T, file), "x");
  fs.symlinkSync(path.join(T, "etc"), path.join(T, "work/link-out")); // escapes the workdir
  fs.symlinkSync(path.join(T, "work/sub"), path.join(T, "work/alias")); // stays inside
  fs.symlinkSync(path.join(T, "data/runs"), path.join(T, "work/link-in-grant")); // inside-007
  fs.symlinkSync(path.join(T, "etc"), path.join(T, "data/runs/link")); // trav-004
  fs.symlinkSync(path.join(T, "work/file.txt"), path.join(T, "outside/back-to-work")); // sym-009
});

afterAll(() => {
  fs.rmSync(T, { recursive: true, force: true });
});

function ctx(declared: string[] = [], granted: string[] = []): ResolveContext {
  const built = buildReadPathPolicy({ agentName: "cto", declared, granted, allowBlueprintReadPaths: false, workdir: W, home: "/nonexistent-home" });
  if (!built.ok) throw new Error(built.error);
  return { workdir: W, policy: built.value, fs: realFs };
}

/** A policy declaring and granting `<T>/data/runs` and `../shared`, declaring `<T>/etc` without a grant. */
function activeCtx(): ResolveContext {
  return ctx([`${T}/data/runs`, "../shared", `${T}/etc`], [`${T}/data/runs`, "../shared"]);
}

function summary(r: PathResolution): string {
  return r.ok ? `${r.decision} ${r.code} ${r.openPath}` : `${r.decision} ${r.code} ${r.message}`;
}

describe("inside the workdir", () => {
  it.each([
    ["file.txt", "work/file.txt"],
    ["./sub/../file.txt", "work/file.txt"],
    ["sub//x/", "work/sub/x"],
    ["", "work"],
    ["~/docs/a.md", "work/~/docs/a.md"], // ~ is never expanded in requests (trav-008)
    ["alias/new.txt", "work/alias/new.txt"], // the lexical path is opened (inside-005)
  ])("reads %j at its lexical path", (request, rel) => {
    const r = resolveRead(request, activeCtx());
    expect(summary(r)).toBe(`inside_workdir inside-workdir ${path.join(T, rel)}`);
  });

  it("accepts absolute requests inside the workdir and reports the canonical path too", () => {
    const r = resolveRead(`${W}/alias/x`, ctx());
    expect(r).toEqual({ ok: true, decision: "inside_workdir", code: "inside-workdir", openPath: `${W}/alias/x`, canonicalPath: `${W}/sub/x` });
  });

  it.each(["/dev/null", "nul", "NUL", "Nul"])("short-circuits the null device %j", (request) => {
    expect(resolveRead(request, ctx())).toEqual({ ok: true, decision: "null_device", code: "null-device", openPath: "/dev/null", canonicalPath: null });
  });

  it("does not treat ./nul or nul.txt as the null device", () => {
    expect(summary(resolveRead("./nul", ctx()))).toBe(`inside_workdir inside-workdir ${W}/nul`);
    expect(summary(resolveRead("nul.txt", ctx()))).toBe(`inside_workdir inside-workdir ${W}/nul.txt`);
  });
});

describe("policy inactive: the plain workdir errors stand", () => {
  it("refuses an outside path", () => {
    expect(resolveRead(`${T}/data/runs/r1/log.txt`, ctx())).toEqual({
      ok: false,
      decision: "WorkdirRefusal",
      code: "outside-workdir",
      message: `path '${T}/data/runs/r1/log.txt' would escape the working directory (${W}). Use a path inside the workspace instead - a relative path resolves against it.`,
    });
  });

  it("refuses .. above / without clamping", () => {
    const request = `${"../".repeat(W.split("/").length)}etc/passwd`;
    expect(resolveRead(request, ctx())).toEqual({
      ok: false,
      decision: "WorkdirRefusal",
      code: "escapes-workdir",
      message: `path '${request}' escapes the working directory`,
    });
  });

  it("refuses a symlink out of the workdir, existing target or not", () => {
    for (const request of ["link-out/secret", "link-out/new.txt", "link-out"]) {
      expect(resolveRead(request, ctx())).toEqual({
        ok: false,
        decision: "WorkdirRefusal",
        code: "symlink-escape",
        message: `path '${request}' resolves outside the working directory through a symlink`,
      });
    }
  });
});

describe("policy active: read tools fall back to [read_paths]", () => {
  it("allows a declared and granted path and opens the canonical path", () => {
    const request = `${T}/data/runs/r1/log.txt`;
    expect(resolveRead(request, activeCtx())).toEqual({ ok: true, decision: "Allowed", code: "allowed", openPath: request, canonicalPath: request });
  });

  it("follows a workdir symlink into a granted area (inside-007)", () => {
    expect(summary(resolveRead("link-in-grant/r1/log.txt", activeCtx()))).toBe(`Allowed allowed ${T}/data/runs/r1/log.txt`);
  });

  it("resolves relative requests against the workdir in the fallback (exact-014, trav-011)", () => {
    expect(summary(resolveRead("../shared/doc.md", activeCtx()))).toBe(`Allowed allowed ${T}/shared/doc.md`);
  });

  it("folds .. before resolving symlinks (trav-004)", () => {
    // POSIX would resolve link/.. to <T>; the request is judged and opened as data/runs/r1/log.txt.
    expect(summary(resolveRead(`${T}/data/runs/link/../r1/log.txt`, activeCtx()))).toBe(`Allowed allowed ${T}/data/runs/r1/log.txt`);
  });

  it("refuses a symlink inside the granted tree that points out (sym-001)", () => {
    const request = `${T}/data/runs/link/secret`;
    expect(resolveRead(request, ctx([`${T}/data/runs`], [`${T}/data/runs`]))).toEqual({
      ok: false,
      decision: "NotDeclared",
      code: "not-declared",
      message: `path '${request}' is outside the working directory and not in this agent's [read_paths]`,
    });
  });

  it("names the agent when a declared path is not granted", () => {
    const request = `${T}/etc/secret`;
    expect(resolveRead(request, activeCtx())).toEqual({
      ok: false,
      decision: "NotGranted",
      code: "not-granted",
      message: `path '${request}' matches this agent's [read_paths], but your config does not grant it; add it under [agent_read_paths.cto] (or set allow_blueprint_read_paths = true under [security]) in your config.toml`,
    });
  });

  it("refuses a link outside the workdir pointing back in unless that is declared (sym-009)", () => {
    expect(resolveRead(`${T}/outside/back-to-work`, activeCtx()).decision).toBe("NotDeclared");
  });

  it("refuses symlink escapes from the workdir through the policy, not around it", () => {
    expect(resolveRead("link-out/secret", activeCtx()).decision).toBe("NotGranted");
    expect(resolveRead("link-out/secret", ctx([`${T}/data/runs`], [`${T}/data/runs`])).decision).toBe("NotDeclared");
  });

  it("is Unresolvable when .. climbs above / (trav-002, trav-005)", () => {
    const request = `${"../".repeat(W.split("/").length)}etc/passwd`;
    expect(resolveRead(request, activeCtx())).toEqual({
      ok: false,
      decision: "Unresolvable",
      code: "unresolvable",
      message: `path '${request}' cannot be resolved`,
    });
  });

  it("fails closed when the filesystem port fails: never an allow", () => {
    const broken: PathFs = {
      realpath: () => {
        throw new Error("EIO");
      },
    };
    const c = { ...activeCtx(), fs: broken };
    expect(resolveRead("file.txt", c).decision).toBe("Unverifiable");
    expect(resolveRead(`${T}/data/runs/r1/log.txt`, c)).toEqual({
      ok: false,
      decision: "Unverifiable",
      code: "unverifiable",
      message: `path '${T}/data/runs/r1/log.txt' cannot be verified against [read_paths]`,
    });
    expect(resolveRead("file.txt", { ...c, policy: null }).code).toBe("symlink-escape");
  });
});

describe("write tools never fall back", () => {
  it("refuses even a declared and granted path outside the workdir (tool-001, tool-002, tool-004)", () => {
    const r = resolveWrite(`${T}/data/runs/r1/log.txt`, activeCtx());
    expect(r.ok ? r.decision : `${r.decision} ${r.code}`).toBe("WorkdirRefusal outside-workdir");
  });

  it("resolves inside paths and the null device", () => {
    expect(summary(resolveWrite("sub/new.txt", activeCtx()))).toBe(`inside_workdir inside-workdir ${W}/sub/new.txt`);
    expect(resolveWrite("NUL", activeCtx()).decision).toBe("null_device");
    expect(resolveWrite("link-out/x", activeCtx()).ok).toBe(false);
  });

  it("refuses when the workspace is gone or is not a directory", () => {
    const gone = path.join(T, "gone");
    expect(resolveWrite("a.txt", { ...ctx(), workdir: gone })).toEqual({
      ok: false,
      decision: "WorkdirRefusal",
      code: "workspace-missing",
      message: `workspace '${gone}' is no longer accessible`,
    });
    expect(resolveWrite("a.txt", { ...ctx(), workdir: `${W}/file.txt` }).ok).toBe(false);
  });

  it("treats a relative workdir as a bug", () => {
    expect(() => resolveRead("a", { ...ctx(), workdir: "work" })).toThrow(/absolute, canonical workdir/);
  });
});
