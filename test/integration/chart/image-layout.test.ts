// The image's layout without building the image (its Node base is not pullable here): the Dockerfile's
// shape, and the exact files its final stage holds (package.json, bin/, dist/ from `tsc`, no src/) run
// `leviath` with production dependencies only.
import { spawnSync } from "node:child_process";
import { appendFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/index.ts";

const dockerfile = readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8");
const stages = dockerfile.split(/^FROM /m).slice(1);
// The operator stage is the default target (the last stage is a bare `FROM operator`); the agent stage builds on it.
const finalStage = stages.find((st) => / AS operator\n/.test(st.split("\n")[0]! + "\n"))!;
const agentStage = stages.find((st) => st.startsWith("operator AS agent"))!;
const app = mkdtempSync(join(tmpdir(), "leviath-image-"));
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };

beforeAll(() => {
  const tsc = spawnSync(process.execPath, [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", join(app, "dist")], { cwd: REPO_ROOT, encoding: "utf8" });
  if (tsc.status !== 0) throw new Error(`tsc failed: ${tsc.stdout}${tsc.stderr}`);
  cpSync(join(REPO_ROOT, "bin"), join(app, "bin"), { recursive: true });
  cpSync(join(REPO_ROOT, "package.json"), join(app, "package.json"));
  symlinkSync(join(REPO_ROOT, "node_modules"), join(app, "node_modules"));
}, 300_000);

const leviath = (args: string[]) => spawnSync(process.execPath, [join(app, "bin/leviath"), ...args], { cwd: REPO_ROOT, encoding: "utf8" });

/** Every .js file under `dir`. */
function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile() && e.name.endsWith(".js")).map((e) => join(e.parentPath, e.name));
}

describe("the Dockerfile", () => {
  it("builds in stages and runs as a numeric non-root user with entrypoint leviath", () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-[a-z-]+$/m);
    expect(finalStage).toMatch(/^USER 65532:65532$/m);
    expect(finalStage).toMatch(/^ENTRYPOINT \["leviath"\]$/m);
    expect(finalStage).toContain("PATH=/app/bin:$PATH");
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(finalStage).not.toMatch(/^COPY (?!--from)(src|\.)\b/m);
    expect(finalStage).toMatch(/^COPY --from=deps \/src\/node_modules \.\/node_modules$/m);
    expect(finalStage).toMatch(/^COPY --from=build \/src\/dist \.\/dist$/m);
    expect(stages.at(-1)!.trim()).toBe("operator");
    expect(agentStage).toMatch(/^ENTRYPOINT \["leviath", "agent"\]$/m);
    expect(agentStage).not.toMatch(/^USER /m);
  });

  it("copies only what .dockerignore lets into the build context", () => {
    const allowed = readFileSync(join(REPO_ROOT, ".dockerignore"), "utf8").split("\n").filter((l) => l.startsWith("!")).map((l) => l.slice(1).replace(/\/$/, ""));
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) expect(allowed, s).toContain(s.replace(/\/$/, ""));
  });
});

describe("the image's files", () => {
  it("run leviath from dist/ without src/", () => {
    const help = leviath(["--help"]);
    expect(help.status).toBe(0);
    for (const command of ["controller", "sidecar", "import"]) expect(help.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    const controller = leviath(["controller", "--help"]);
    expect(controller.stdout).toContain("Usage: leviath controller");
    const imported = leviath(["import", "examples/agent.leviath", "--namespace", "leviath-sandbox"]);
    expect(imported.status).toBe(0);
    expect(imported.stdout).toContain("name: notes-digest");
    // The kubectl plugin is the same program under kubectl's name for it.
    const plugin = spawnSync(process.execPath, [join(app, "bin/kubectl-leviath"), "wait", "--help"], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(plugin.status, plugin.stderr).toBe(0);
    expect(plugin.stdout).toContain("Usage: kubectl leviath wait RUN");
  });

  it("import nothing at run time but Node's built-ins and production dependencies", () => {
    const builtins = new Set(builtinModules);
    const bare = new Set<string>();
    for (const file of jsFiles(join(app, "dist"))) {
      for (const m of readFileSync(file, "utf8").matchAll(/(?:^|[\s;])(?:import|export)\s[^"';]*?from\s+"([^"]+)"|import\("([^"]+)"\)/gm)) {
        const spec = m[1] ?? m[2]!;
        if (spec.startsWith(".") || spec.startsWith("node:")) continue;
        bare.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!);
      }
    }
    expect(bare.size).toBeGreaterThan(3);
    for (const name of bare) expect(builtins.has(name) || name in pkg.dependencies, name).toBe(true);
  });
});

describe("the image's compile cache", () => {
  const withCacheLog = (args: string[]) => spawnSync(process.execPath, [join(app, "bin/leviath"), ...args], { cwd: REPO_ROOT, encoding: "utf8", env: { ...process.env, NODE_DEBUG_NATIVE: "COMPILE_CACHE" } });

  it("is written by scripts/compile-cache.mjs and read by bin/leviath; an entry whose source changed is compiled as without it", () => {
    const made = spawnSync(process.execPath, [join(REPO_ROOT, "scripts/compile-cache.mjs"), app], { encoding: "utf8" });
    expect(made.status, made.stderr).toBe(0);
    const read = withCacheLog(["sidecar", "--help"]);
    expect(read.status, read.stderr).toBe(0);
    expect(read.stdout).toContain("Usage: leviath sidecar");
    expect(read.stderr).toMatch(/code cache for ESM file:\/\/\S+\/dist\/cli\/sidecar\.js was accepted/);
    // The same module changed after the cache was written (an image rebuilt without it, a patched file): not used.
    appendFileSync(join(app, "dist/cli/sidecar.js"), "\n// changed after the cache was written\n");
    const stale = withCacheLog(["sidecar", "--help"]);
    expect(stale.status, stale.stderr).toBe(0);
    expect(stale.stdout).toContain("Usage: leviath sidecar");
    expect(stale.stderr).toMatch(/reading cache from \S+ for ESM file:\/\/\S+\/dist\/cli\/sidecar\.js\.\.\.\S*.*mismatch/);
    expect(stale.stderr).not.toMatch(/code cache for ESM file:\/\/\S+\/dist\/cli\/sidecar\.js was accepted/);
  });
});
