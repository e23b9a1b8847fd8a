// Seeds through the read-path fence (read-paths spec §7, sandbox-and-blueprint §3.6), against the real standalone
// sidecar on a real tree with real symlinks: a seed inside the workdir, one outside, one declared and granted, one
// symlinked out, `blueprint:` paths escaping the blueprint's directory (even to a granted file), a glob one of whose
// matches escapes, and a rhai script path. Refusals carry upstream's spawn message; content gets its source's label.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeTempDir, post, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

let root = "";
let work = "";
let sc: SidecarProcess;

type SeedAnswer = { region?: string; content?: string; sources?: { path: string; origin: string }[]; label?: string; taint?: string; entry?: { level: string }; code?: string; message?: string };
const seed = (region: string, body: Record<string, unknown>, entry?: { region: string; id: string }) => post<SeedAnswer>(`${sc.url}/v1/seeds`, { region, seed: body, ...(entry ? { entry } : {}) });
const outside = (region: string, path: string) => `region '${region}': seed path '${path}' resolves outside the working directory (${work}); grant it with [read_paths] in the blueprint and your config, or move it inside`;

beforeAll(async () => {
  root = makeTempDir("leviath-seeds-");
  work = join(root, "work");
  const agent = join(root, "agent");
  mkdirSync(join(work, "docs"), { recursive: true });
  mkdirSync(join(agent, "prompts"), { recursive: true });
  mkdirSync(join(root, "shared"));
  writeFileSync(join(work, "notes.md"), "notes\n");
  writeFileSync(join(work, "docs", "a.md"), "A\n");
  writeFileSync(join(work, "docs", "b.md"), "B\n");
  writeFileSync(join(work, "seed.rhai"), "\"from rhai\"\n");
  writeFileSync(join(root, "shared", "design.md"), "the design\n");
  writeFileSync(join(root, "other.txt"), "not granted\n");
  writeFileSync(join(root, "bp-target.txt"), "granted, but outside the blueprint\n");
  writeFileSync(join(agent, "prompts", "intro.md"), "intro from the blueprint\n");
  symlinkSync(join(root, "other.txt"), join(work, "docs", "c.md"));
  symlinkSync(join(root, "other.txt"), join(work, "link-out"));
  symlinkSync(join(root, "bp-target.txt"), join(agent, "escape"));
  writeFileSync(join(agent, "agent.leviath"), `[agent]\nname = 'seeder'\n[read_paths]\nallow = ['${root}/shared', '${root}/bp-target.txt']\n[security]\ntaint_tracking = true\n`);
  writeFileSync(join(root, "config.toml"), `[agent_read_paths.seeder]\nallow = ['${root}/shared', '${root}/bp-target.txt']\n`);
  sc = await startSidecar(["--agent", agent, "--config", join(root, "config.toml"), "--workdir", work, "--audit-dir", join(root, "audit")]);
}, 60_000);

afterAll(async () => {
  if (sc) expect(await sc.stop()).toBe(0);
});

describe("POST /v1/seeds: the read-path fence on seeds", () => {
  it("fills a files seed inside the workdir, labelled as read_file labels that file", async () => {
    const r = await seed("notes", { files: ["notes.md", "docs/a.md"] });
    expect(r.status).toBe(200);
    const read = await callTool(sc, "read_file", { path: "notes.md" });
    expect(r.body).toMatchObject({ region: "notes", content: "notes\nA\n", sources: [{ path: "notes.md", origin: "workdir" }, { path: "docs/a.md", origin: "workdir" }], label: read.body.label });
  });

  it("refuses a path outside the workdir with upstream's spawn message", async () => {
    const r = await seed("notes", { files: ["notes.md", "../other.txt"] });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ decision: "deny", code: "seed-outside-workdir", message: outside("notes", "../other.txt") });
  });

  it("fills a declared and granted path outside the workdir, labelled private, and taints the entry it lands in", async () => {
    const r = await seed("design", { files: [join(root, "shared", "design.md")] }, { region: "design", id: "seed-1" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ content: "the design\n", sources: [{ origin: "granted" }], label: "private", entry: { level: "private" }, taint: "private" });
  });

  it("refuses a symlink inside the workdir that points out of it", async () => {
    const r = await seed("notes", { files: ["link-out"] });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(outside("notes", "link-out"));
  });

  it("checks each glob match: one escaping match refuses the seed, naming it; the others fill it in order", async () => {
    const refused = await seed("docs", { glob: "docs/*.md" });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(outside("docs", join(work, "docs", "c.md")));
    const filled = await seed("docs", { glob: "docs/[ab].md" });
    expect(filled.status).toBe(200);
    expect(filled.body).toMatchObject({ content: "A\nB\n", sources: [{ path: join(work, "docs", "a.md") }, { path: join(work, "docs", "b.md") }] });
  });

  it("checks a rhai seed's script path and hands back its source", async () => {
    expect((await seed("computed", { rhai: "seed.rhai" })).body).toMatchObject({ content: "\"from rhai\"\n", sources: [{ origin: "workdir" }] });
    const r = await seed("computed", { rhai: "../other.txt" });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(outside("computed", "../other.txt"));
  });

  it("reads blueprint: seeds from the blueprint's directory only, which no grant widens", async () => {
    expect((await seed("intro", { files: ["blueprint:prompts/intro.md"] })).body).toMatchObject({ content: "intro from the blueprint\n", sources: [{ origin: "blueprint" }], label: "public" });
    for (const path of ["blueprint:../bp-target.txt", "blueprint:escape", `blueprint:${root}/bp-target.txt`]) {
      const r = await seed("intro", { files: [path] });
      expect(r.status, path).toBe(403);
      expect(r.body.code).toBe("seed-outside-blueprint");
      expect(r.body.message).toMatch(new RegExp(`^region 'intro': seed path '${path.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}' .*; a blueprint: seed reads only files that ship with the blueprint, and no grant widens it$`));
    }
    // The granted file itself is readable as a plain seed: only the blueprint: prefix confines it.
    expect((await seed("intro", { files: [join(root, "bp-target.txt")] })).status).toBe(200);
  });

  it("answers the runtime only (its token), like every other route", async () => {
    const r = await post(`${sc.url}/v1/seeds`, { region: "notes", seed: { files: ["notes.md"] } }, { authorization: "Bearer wrong" });
    expect(r.status).toBe(401);
  });

  it("refuses a malformed seed naming the field", async () => {
    const r = await seed("x", { files: [], literal: "y" });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("invalid-request");
  });
});
