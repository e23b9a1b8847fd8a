import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeModuleHook } from "../fixtures/module-hook.ts";
import { callTool, makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// The standalone sidecar never loads the Kubernetes client (about 90 MiB resident with its generated model), nor
// the CEL library (about 27 MiB) unless its policy has rules, nor the YAML parser unless a file it reads is YAML:
// a module hook preloaded into the real process lists every module it loads while it decides calls.
let root: string;

/** A sidecar over its own tree whose every loaded module URL goes to `loaded`. */
async function startListed(name: string, extraArgs: (dir: string) => string[], agentFile = "agent.leviath"): Promise<{ sc: SidecarProcess; loaded: () => string[] }> {
  const dir = join(root, name);
  mkdirSync(join(dir, "home", "vault"), { recursive: true });
  mkdirSync(join(dir, "work"));
  writeFileSync(join(dir, "work", "notes.txt"), "hello\n");
  writeFileSync(join(dir, "agent.leviath"), `[agent]\nname = '${name}'\n[read_paths]\nallow = ['~/vault']\n[security]\ntaint_tracking = true\n`);
  writeFileSync(join(dir, "config.toml"), `[tool_permissions]\nshell = 'allow'\n[agent_read_paths.${name}]\nallow = ['~/vault']\n`);
  const hook = writeModuleHook(dir);
  const sc = await startSidecar(["--agent", join(dir, agentFile), "--config", join(dir, "config.toml"), "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit"), ...extraArgs(dir)], {
    env: { LEVIATH_HOME: join(dir, "home"), NODE_OPTIONS: hook.nodeOptions },
  });
  return { sc, loaded: hook.loaded };
}

let plain: Awaited<ReturnType<typeof startListed>>;
let ruled: Awaited<ReturnType<typeof startListed>>;
let yamlAgent: Awaited<ReturnType<typeof startListed>>;

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-modules-");
  plain = await startListed("plain", () => []);
  ruled = await startListed("ruled", (dir) => {
    mkdirSync(join(dir, "rules"));
    writeFileSync(join(dir, "rules", "ops.cel"), 'tool == "shell" && taint_level == "private"\n');
    writeFileSync(join(dir, "rules", "broken.cel"), "tool ==\n");
    return ["--rules", join(dir, "rules")];
  });
  yamlAgent = await startListed("yamled", (dir) => {
    writeFileSync(join(dir, "agent.yaml"), "apiVersion: leviath.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: yamled\nspec:\n  agent:\n    name: yamled\n");
    return [];
  }, "agent.yaml");
}, 180_000);

afterAll(async () => {
  await plain?.sc.stop();
  await ruled?.sc.stop();
  await yamlAgent?.sc.stop();
});

describe("leviath sidecar standalone: what it loads", () => {
  it("decides calls without loading @kubernetes/client-node, nor @bufbuild/cel for a policy without rules, nor yaml for TOML files", async () => {
    const r = await callTool(plain.sc, "read_file", { path: "notes.txt" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ decision: "allow", taint: "private" });
    // Private context, no rule: the gate asks before shell runs.
    expect((await callTool(plain.sc, "shell", { command: "echo hi" })).status).toBe(202);
    const urls = plain.loaded();
    // The hook saw the sidecar's own stack, so an absence below means something.
    expect(urls.some((u) => u.includes("/node_modules/fastify/"))).toBe(true);
    expect(urls.some((u) => u.includes("/src/sidecar/server.") || u.includes("/dist/sidecar/server."))).toBe(true);
    expect(urls.filter((u) => u.includes("@kubernetes/client-node"))).toEqual([]);
    expect(urls.filter((u) => u.includes("@bufbuild/cel"))).toEqual([]);
    // Its files are TOML: the YAML parser is never loaded (it polls them every second too).
    expect(urls.filter((u) => u.includes("/node_modules/yaml/"))).toEqual([]);
    // Tracing is off without --otlp-traces-endpoint: no tracer, and OpenTelemetry's SDK and exporter not even loaded
    // (issue 43). Its API is: prom-client requires it when it is installed, for exemplars.
    const tracing = urls.filter((u) => u.includes("@opentelemetry/") || u.includes("/tracing/otlp-tracer.") || u.includes("/core/call-spans."));
    expect(tracing.filter((u) => !u.includes("/node_modules/@opentelemetry/api/"))).toEqual([]);
  });

  it("loads the YAML parser for an Agent given as YAML, and decides with it", async () => {
    const r = await callTool(yamlAgent.sc, "read_file", { path: "notes.txt" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ decision: "allow", result: "hello\n" });
    expect(yamlAgent.loaded().some((u) => u.includes("/node_modules/yaml/"))).toBe(true);
  });

  it("loads the CEL library for a policy with rules, and its rules decide", async () => {
    // The rule that does not compile is reported at start and never allows.
    expect(ruled.sc.stderr()).toContain("rule 'broken' never allows (compile-error)");
    expect((await callTool(ruled.sc, "read_file", { path: "notes.txt" })).body).toMatchObject({ decision: "allow", taint: "private" });
    const shell = await callTool(ruled.sc, "shell", { command: "echo hi" });
    expect(shell.status).toBe(200);
    expect(shell.body).toMatchObject({ decision: "allow", result: "hi\n" });
    expect(ruled.loaded().some((u) => u.includes("@bufbuild/cel"))).toBe(true);
  });
});
