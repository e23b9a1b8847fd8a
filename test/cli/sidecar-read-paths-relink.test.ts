import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// An exact grant that is a link, relinked and its directory moved while the sidecar runs: each read is decided on
// what the root names at that call. The sidecar proves a match with the root's last canonical form only after
// checking the root still names that very directory (src/policy/read-paths/decide.ts), so neither the old target
// nor a directory planted under the old name can be read through it.
let root: string;
let home: string;
let sc: SidecarProcess;

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-relink-");
  home = join(root, "home");
  for (const dir of ["a", "b", "work"]) mkdirSync(join(home, dir), { recursive: true });
  writeFileSync(join(home, "a", "notes.md"), "a notes\n");
  writeFileSync(join(home, "b", "secret.md"), "b secret\n");
  symlinkSync(join(home, "a"), join(home, "shared"));
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'relink'\n[read_paths]\nallow = ['~/shared']\n");
  writeFileSync(join(root, "config.toml"), "[agent_read_paths.relink]\nallow = ['~/shared']\n");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(home, "work"), "--audit-dir", join(root, "audit")], { env: { LEVIATH_HOME: home } });
});

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

const read = async (path: string) => (await callTool(sc, "read_file", { path })).body;
const relink = (to: string) => {
  rmSync(join(home, "shared"));
  symlinkSync(join(home, to), join(home, "shared"));
};

describe("leviath sidecar: an exact grant relinked while it runs", () => {
  it("reads the new target and refuses the old one from the first call after the link changed", async () => {
    expect(await read(join(home, "a", "notes.md"))).toMatchObject({ decision: "allow", result: "a notes\n" });
    expect(await read(join(home, "shared", "notes.md"))).toMatchObject({ decision: "allow", result: "a notes\n" });
    expect((await read(join(home, "b", "secret.md"))).decision).toBe("deny");
    relink("b");
    expect((await read(join(home, "a", "notes.md"))).decision).toBe("deny");
    expect(await read(join(home, "b", "secret.md"))).toMatchObject({ decision: "allow", result: "b secret\n" });
    relink("a");
    expect((await read(join(home, "b", "secret.md"))).decision).toBe("deny");
  });

  it("refuses a directory planted under the old name of the granted one, which moved with its link", async () => {
    expect(await read(join(home, "a", "notes.md"))).toMatchObject({ decision: "allow" });
    renameSync(join(home, "a"), join(home, "moved"));
    relink("moved");
    mkdirSync(join(home, "a"));
    writeFileSync(join(home, "a", "planted.md"), "planted\n");
    expect((await read(join(home, "a", "planted.md"))).decision).toBe("deny");
    expect(await read(join(home, "moved", "notes.md"))).toMatchObject({ decision: "allow", result: "a notes\n" });
  });
});
