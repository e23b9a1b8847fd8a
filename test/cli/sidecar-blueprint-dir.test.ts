// `blueprint:` seeds in a cluster, over the real sidecar started as the engine pod starts it (--run-policy,
// --blueprint-dir): the blueprint directory is the kubelet's layout of a ConfigMap volume (each file a symlink into
// ..data, itself a symlink to a timestamped directory), holding the Agent's files the controller pinned at start.
// A seed reads only from it; a path escaping it is refused even where the run policy grants the target.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../src/api/run-policy.ts";
import { leviath } from "./run-cli.ts";
import { makeTempDir, post, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

let root = "";
let sc: SidecarProcess;

type SeedAnswer = { content?: string; sources?: { path: string; origin: string }[]; label?: string; code?: string; message?: string };
const seed = (region: string, body: Record<string, unknown>) => post<SeedAnswer>(`${sc.url}/v1/seeds`, { region, seed: body });
const refusal = (region: string, path: string, why: string) => `region '${region}': seed path '${path}' ${why}; a blueprint: seed reads only files that ship with the blueprint, and no grant widens it`;

/** A ConfigMap volume as the kubelet writes it. */
function configMapVolume(dir: string, files: Record<string, string>): void {
  mkdirSync(join(dir, "..2026_12_01_15_00_00.000000001"), { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, "..2026_12_01_15_00_00.000000001", name), text);
  symlinkSync("..2026_12_01_15_00_00.000000001", join(dir, "..data"));
  for (const name of Object.keys(files)) symlinkSync(`..data/${name}`, join(dir, name));
}

function runPolicyFile(granted: string[]): string {
  const path = join(root, "run-policy.json");
  writeFileSync(path, JSON.stringify(RunPolicySchema.parse({
    agent: { key: "default/bp", name: "bp" },
    stages: [{ name: "main", sandbox: { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" } }],
    entryStage: "main",
    launch: { mode: "interactive", allow: [] },
    toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
    readPaths: { declared: granted, granted, allowBlueprintReadPaths: false },
    taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
    limits: { interactionTimeoutSeconds: 3600, shellTimeoutSeconds: 60 },
  })));
  return path;
}

beforeAll(async () => {
  root = makeTempDir("leviath-blueprint-dir-");
  mkdirSync(join(root, "work"));
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'bp'\n");
  writeFileSync(join(root, "x"), "granted, outside the blueprint directory\n");
  configMapVolume(join(root, "blueprint"), { "intro.md": "intro from the Agent's ConfigMap\n", "outro.md": "outro\n", "notes.txt": "notes\n" });
  sc = await startSidecar(["--run-policy", runPolicyFile([join(root, "x")]), "--run", "bp", "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--blueprint-dir", join(root, "blueprint")]);
}, 60_000);

afterAll(async () => {
  if (sc) expect(await sc.stop()).toBe(0);
});

describe("blueprint: seeds from the directory the controller mounts", () => {
  it("fills a blueprint: seed from the mounted files, labelled as the blueprint's own text", async () => {
    const r = await seed("intro", { files: ["blueprint:intro.md"] });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ content: "intro from the Agent's ConfigMap\n", sources: [{ path: "blueprint:intro.md", origin: "blueprint" }], label: "public" });
  });

  it("fills a blueprint: glob from the mounted files only, not the kubelet's own entries", async () => {
    const r = await seed("all", { glob: "blueprint:*.md" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ content: "intro from the Agent's ConfigMap\noutro\n", sources: [{ path: "blueprint:intro.md" }, { path: "blueprint:outro.md" }] });
  });

  it("refuses blueprint:../x, even though the run policy grants x", async () => {
    const r = await seed("intro", { files: ["blueprint:../x"] });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "seed-outside-blueprint", message: refusal("intro", "blueprint:../x", `resolves outside the blueprint's directory (${join(root, "blueprint")})`) });
    const absolute = await seed("intro", { files: [`blueprint:${join(root, "x")}`] });
    expect(absolute.status).toBe(403);
    expect(absolute.body.code).toBe("seed-outside-blueprint");
    // The granted file is readable as a plain seed: only the blueprint: prefix confines it.
    expect((await seed("intro", { files: [join(root, "x")] })).body).toMatchObject({ sources: [{ origin: "granted" }], label: "private" });
  });
});

describe("leviath sidecar --blueprint-dir", () => {
  const start = (args: string[]) => leviath(["sidecar", "--listen", "127.0.0.1:0", "--audit-dir", join(root, "audit"), ...args], { env: { LEVIATH_HOME: root } });

  it("is refused without --run-policy, and when the directory is missing, before serving", () => {
    const alone = start(["--agent", join(root, "agent.leviath"), "--workdir", join(root, "work"), "--blueprint-dir", join(root, "blueprint")]);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toContain("--blueprint-dir needs --run-policy");
    const missing = start(["--run-policy", join(root, "run-policy.json"), "--run", "bp", "--workdir", join(root, "work"), "--blueprint-dir", join(root, "nope")]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain(`--blueprint-dir '${join(root, "nope")}'`);
  });
});
