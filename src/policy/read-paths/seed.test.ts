import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PathFs } from "./canonicalize.ts";
import { buildReadPathPolicy } from "./read-path-policy.ts";
import type { ResolveContext } from "./resolve.ts";
import { buildSeedOutsideMessage, resolveBlueprintSeedPath, resolveSeedPath } from "./seed.ts";

const realFs: PathFs = { realpath: (p) => fs.realpathSync.native(p) };
let T = "";
let W = "";
let B = "";

beforeAll(() => {
  T = fs.realpathSync.native(fs.mkdtempSync(path.join(os.tmpdir(), "read-paths-seed-")));
  W = path.join(T, "work");
  B = path.join(T, "blueprint");
  for (const dir of ["work/sub", "shared", "etc", "blueprint/prompts"]) fs.mkdirSync(path.join(T, dir), { recursive: true });
  for (const file of ["work/a.md", "shared/doc.md", "etc/secret", "blueprint/prompts/p.md"]) fs.writeFileSync(path.join(T, file), "x");
  fs.symlinkSync(path.join(T, "etc"), path.join(W, "link-out"));
  fs.symlinkSync(path.join(T, "shared"), path.join(B, "to-shared"));
});

afterAll(() => fs.rmSync(T, { recursive: true, force: true }));

function ctx(declared: string[], granted: string[]): ResolveContext {
  const built = buildReadPathPolicy({ agentName: "a", declared, granted, allowBlueprintReadPaths: false, workdir: W, home: undefined });
  if (!built.ok) throw new Error(built.error);
  return { workdir: W, policy: built.value, fs: realFs };
}

describe("resolveSeedPath", () => {
  it.each([
    ["a workdir file", "a.md", "workdir", () => path.join(W, "a.md")],
    ["a missing workdir file (its parent resolves inside)", "sub/new.md", "workdir", () => path.join(W, "sub/new.md")],
    ["a declared and granted path, relative", "../shared/doc.md", "granted", () => path.join(T, "shared/doc.md")],
    ["`link/..` as the kernel resolves it (into <T>)", "link-out/../shared/doc.md", "granted", () => path.join(T, "shared/doc.md")],
  ])("lets %s through", (_what, request, origin, open) => {
    expect(resolveSeedPath("r", request, ctx([`${T}/shared`, `${T}/etc`], [`${T}/shared`]))).toEqual({ ok: true, origin, openPath: open() });
  });

  it.each([
    ["a declared path nobody grants", "../etc/secret"],
    ["a symlink out to a declared, ungranted path", "link-out/secret"],
    ["an undeclared path", "/etc/passwd"],
  ])("refuses %s with upstream's spawn message", (_what, request) => {
    expect(resolveSeedPath("notes", request, ctx([`${T}/shared`, `${T}/etc`], [`${T}/shared`]))).toEqual({ ok: false, code: "seed-outside-workdir", message: buildSeedOutsideMessage("notes", request, W) });
  });

  it("refuses everything outside when the blueprint declares nothing (the policy is inactive)", () => {
    expect(resolveSeedPath("r", "../shared/doc.md", { workdir: W, policy: null, fs: realFs }).ok).toBe(false);
  });
});

describe("resolveBlueprintSeedPath", () => {
  it("reads inside the blueprint's directory, and nothing a symlink or .. takes out of it", () => {
    expect(resolveBlueprintSeedPath("r", "blueprint:prompts/p.md", B, realFs)).toEqual({ ok: true, origin: "blueprint", openPath: path.join(B, "prompts/p.md") });
    for (const p of ["blueprint:../shared/doc.md", "blueprint:to-shared/doc.md", `blueprint:${T}/shared/doc.md`, "blueprint:"]) {
      expect(resolveBlueprintSeedPath("r", p, B, realFs), p).toMatchObject({ ok: false, code: "seed-outside-blueprint" });
    }
    expect(resolveBlueprintSeedPath("r", "blueprint:prompts/p.md", undefined, realFs)).toMatchObject({ ok: false, message: "region 'r': seed path 'blueprint:prompts/p.md' has no blueprint directory to read from; a blueprint: seed reads only files that ship with the blueprint, and no grant widens it" });
  });
});
