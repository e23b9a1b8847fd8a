import { spawn } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// A swapper process flips paths inside a granted tree between a real file or directory and a symlink to a
// secret outside it, as fast as it can, while many reads are in flight. Whatever interleaving happens, no
// read may ever return the secret: the sidecar opens the real path it judged, without following a final
// symlink, and refuses when the descriptor is not that path.
let root: string;
let granted: string;
let sc: SidecarProcess;

const SWAPPER = `
const fs = require("node:fs");
const [granted, secret, ms] = process.argv.slice(1);
const end = Date.now() + Number(ms);
let flips = 0;
const j = (...p) => p.join("/");
while (Date.now() < end) {
  try { fs.symlinkSync(j(secret, "file.txt"), j(granted, "file.tmp")); fs.renameSync(j(granted, "file.tmp"), j(granted, "file.txt")); } catch {}
  try { fs.renameSync(j(granted, "realdir"), j(granted, "realdir.bak")); fs.symlinkSync(secret, j(granted, "realdir")); } catch {}
  try { fs.symlinkSync(j(secret, "file.txt"), j(granted, "swap.tmp")); fs.renameSync(j(granted, "swap.tmp"), j(granted, "swap")); } catch {}
  try { fs.writeFileSync(j(granted, "file.new"), "INSIDE\\n"); fs.renameSync(j(granted, "file.new"), j(granted, "file.txt")); } catch {}
  try { fs.unlinkSync(j(granted, "realdir")); fs.renameSync(j(granted, "realdir.bak"), j(granted, "realdir")); } catch {}
  try { fs.symlinkSync(j(granted, "inside.txt"), j(granted, "swap.tmp")); fs.renameSync(j(granted, "swap.tmp"), j(granted, "swap")); } catch {}
  flips++;
}
process.stdout.write(String(flips));
`;

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-race-");
  const home = join(root, "home");
  granted = join(home, "granted");
  mkdirSync(join(granted, "realdir"), { recursive: true });
  mkdirSync(join(root, "secret"), { recursive: true });
  mkdirSync(join(root, "work"), { recursive: true });
  writeFileSync(join(granted, "inside.txt"), "INSIDE\n");
  writeFileSync(join(granted, "file.txt"), "INSIDE\n");
  writeFileSync(join(granted, "realdir", "file.txt"), "INSIDE\n");
  writeFileSync(join(root, "secret", "file.txt"), "SECRET\n");
  writeFileSync(join(root, "secret", "secret-only-entry"), "SECRET\n");
  symlinkSync(join(granted, "inside.txt"), join(granted, "swap"));
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'racer'\n[read_paths]\nallow = ['~/granted']\n");
  writeFileSync(join(root, "config.toml"), "[agent_read_paths.racer]\nallow = ['~/granted']\n");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit")], {
    env: { LEVIATH_HOME: home },
  });
});

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

function runSwapper(ms: number): Promise<number> {
  const child = spawn(process.execPath, ["-e", SWAPPER, granted, join(root, "secret"), String(ms)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on("exit", () => resolve(Number(out))));
}

describe("symlink swaps during reads", () => {
  it("never returns anything from outside the grant", async () => {
    const swapping = runSwapper(3000);
    const outcomes = { allowed: 0, refused: 0, failed: 0, changed: 0 };
    const leaks: string[] = [];
    let running = true;
    const reader = async (tool: string, args: Record<string, unknown>) => {
      while (running) {
        const r = await callTool(sc, tool, args);
        const text = JSON.stringify(r.body);
        if (text.includes("SECRET") || text.includes("secret-only-entry")) leaks.push(text);
        if (r.body.code === "path-changed") outcomes.changed++;
        if (r.status === 403) outcomes.refused++;
        else if (r.body.isError === true) outcomes.failed++;
        else outcomes.allowed++;
      }
    };
    const targets: [string, Record<string, unknown>][] = [
      ["read_file", { path: join(granted, "file.txt") }],
      ["read_file", { path: join(granted, "realdir/file.txt") }],
      ["read_file", { path: join(granted, "swap") }],
      ["list_dir", { path: join(granted, "realdir") }],
      ["read_files", { paths: [join(granted, "file.txt"), join(granted, "realdir/file.txt"), join(granted, "swap")] }],
    ];
    const readers = [...targets, ...targets].map(([tool, args]) => reader(tool, args));
    const flips = await swapping;
    running = false;
    await Promise.all(readers);
    expect(flips).toBeGreaterThan(100);
    expect(leaks).toEqual([]);
    // Both sides of the race were exercised: some reads saw the grant, some saw the secret and were refused.
    expect(outcomes.allowed).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
    console.info(`race: ${flips} flips; ${JSON.stringify(outcomes)}`);
  });
});
