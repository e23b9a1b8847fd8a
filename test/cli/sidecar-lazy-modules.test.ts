import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// The standalone sidecar never loads the Kubernetes client (about 90 MiB resident with its generated model):
// a module hook preloaded into the real process lists every module it loads while it decides a call.
let root: string;
let loaded: string;
let sc: SidecarProcess;

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-modules-");
  const work = join(root, "work");
  mkdirSync(work);
  writeFileSync(join(work, "notes.txt"), "hello\n");
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'lazy'\n[security]\ntaint_tracking = true\n");
  loaded = join(root, "loaded.txt");
  const hook = join(root, "hook.mjs");
  writeFileSync(hook, [
    'import { registerHooks } from "node:module";',
    'import { appendFileSync } from "node:fs";',
    `registerHooks({ load(url, context, next) { appendFileSync(${JSON.stringify(loaded)}, url + "\\n"); return next(url, context); } });`,
  ].join("\n"));
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--workdir", work, "--audit-dir", join(root, "audit")], {
    env: { LEVIATH_HOME: root, NODE_OPTIONS: `--import ${pathToFileURL(hook).href}` },
  });
}, 120_000);

afterAll(async () => {
  await sc?.stop();
});

describe("leviath sidecar standalone: what it loads", () => {
  it("decides a call without loading @kubernetes/client-node", async () => {
    const r = await callTool(sc, "read_file", { path: "notes.txt" });
    expect(r.status).toBe(200);
    expect(r.body.decision).toBe("allow");
    const urls = readFileSync(loaded, "utf8").split("\n").filter((u) => u !== "");
    // The hook saw the sidecar's own stack, so an absence below means something.
    expect(urls.some((u) => u.includes("/node_modules/fastify/"))).toBe(true);
    expect(urls.some((u) => u.includes("/src/sidecar/server.") || u.includes("/dist/sidecar/server."))).toBe(true);
    expect(urls.filter((u) => u.includes("@kubernetes/client-node"))).toEqual([]);
  });
});
