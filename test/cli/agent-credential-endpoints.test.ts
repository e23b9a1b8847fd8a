// Where the key is used (issue 41, finding 2): `leviath agent` (and `leviath adapter`), a process beside the real
// standalone sidecar, sends
// a credential's key to a base URL the Run picked (`runtime.providers.anthropic.baseUrl`) only where every
// credential Secret ties it, as pinned in runtime.json (`credentialEndpoints`); with no ties, or ties elsewhere,
// the provider is refused and the Run's server receives nothing. The controller refuses such a Run first
// (test/integration/controller/credential-endpoints.test.ts); this holds even if it did not.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { startScriptedModelServer, type ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { runAdapter } from "./adapter-harness.ts";
import { runAgentProcess } from "./agent-process.ts";
import { leviath } from "./run-cli.ts";
import { makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

const AGENT = `[agent]
name = "answer"
entry_stage = "main"

[stages.main]
mode = "output"
model = { models = [{ provider = "anthropic", model = "claude-test" }] }
max_iterations = 2
system_prompt = "Answer."

[stages.main.output]
format = "markdown"

[stages.main.transitions]
`;

let sc: SidecarProcess | undefined;
const servers: ScriptedModelServer[] = [];
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
  for (const s of servers.splice(0)) await s.close();
});

/** The Run's runtime.json: its base URL for anthropic, and the ties pinned with it (absent: none pinned). */
async function runWith(baseUrl: string, ties: { secretName: string; endpoints: string[] }[] | undefined) {
  const dir = makeTempDir("leviath-endpoints-");
  writeFileSync(join(dir, "agent.leviath"), AGENT);
  const imported = leviath(["import", join(dir, "agent.leviath")]);
  expect(imported.status, imported.stderr).toBe(0);
  const spec = (parseYaml(imported.stdout) as { spec: unknown }).spec;
  const runtimeConfig = join(dir, "runtime.json");
  const run = { task: "Say hi.", mode: "headless", runtime: { providers: { anthropic: { baseUrl } } } };
  writeFileSync(runtimeConfig, JSON.stringify({ agent: spec, run, ...(ties ? { credentialEndpoints: ties } : {}) }));
  writeFileSync(join(dir, "config.toml"), "");
  mkdirSync(join(dir, "work"));
  sc = await startSidecar(["--agent", join(dir, "agent.leviath"), "--config", join(dir, "config.toml"), "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit"), "--run", "answer"]);
  // The credential's own endpoint (ANTHROPIC_BASE_URL, as the Secret's owner set it) and the key, in the environment.
  const owners = await startScriptedModelServer([]);
  servers.push(owners);
  return runAgentProcess(dir, runtimeConfig, sc, owners);
}

describe("leviath agent with a base URL the Run picked", { timeout: 120_000 }, () => {
  it("sends the key nowhere when no credential Secret ties that URL, or none is pinned", async () => {
    for (const ties of [undefined, [], [{ secretName: "team-key", endpoints: ["https://api.anthropic.com"] }]]) {
      const collector = await startScriptedModelServer([{ status: 401, body: "{}" }]);
      servers.push(collector);
      const r = await runWith(collector.url, ties);
      expect(r.code, JSON.stringify(ties)).toBe(1);
      expect(r.termination, JSON.stringify(ties)).toContain(`provider 'anthropic': runtime.providers.anthropic.baseUrl '${collector.url}'`);
      expect(collector.requests, JSON.stringify(ties)).toEqual([]);
      await sc?.stop();
      sc = undefined;
    }
  });

  it("sends it there when every credential Secret ties it", async () => {
    const gateway = await startScriptedModelServer([{ status: 401, body: '{"error":{"message":"no"}}' }]);
    servers.push(gateway);
    const r = await runWith(gateway.url, [{ secretName: "gateway-key", endpoints: [gateway.url] }]);
    expect(r.termination).toContain("anthropic answered HTTP 401");
    expect(gateway.requests).toHaveLength(1);
    expect(gateway.requests[0]!.headers["x-api-key"]).toBe("sk-ant-scripted");
  });

  it("keeps leviath adapter from starting a client that would carry the key to an untied base URL (exit 2, nothing started)", async () => {
    const dir = makeTempDir("leviath-endpoints-adapter-");
    const tree = { dir, work: join(dir, "work"), home: join(dir, "home"), runtimeConfig: join(dir, "runtime.json") };
    mkdirSync(tree.work);
    mkdirSync(tree.home);
    writeFileSync(join(dir, "agent.leviath"), "[agent]\nname = 'digest'\n");
    sc = await startSidecar(["--agent", join(dir, "agent.leviath"), "--workdir", tree.work, "--audit-dir", join(dir, "audit"), "--run", "digest"]);
    const collector = await startScriptedModelServer([]);
    servers.push(collector);
    const write = (ties: unknown) => writeFileSync(tree.runtimeConfig, JSON.stringify({
      agent: { runtime: { kind: "claude-code" } }, run: { task: "Digest.", mode: "interactive", runtime: { providers: { anthropic: { baseUrl: collector.url } } } }, ...(ties ? { credentialEndpoints: ties } : {}),
    }));
    write([{ secretName: "team-key", endpoints: ["https://api.anthropic.com"] }]);
    const refused = await runAdapter("claude-code", tree, { sc, model: collector, path: "/nonexistent" });
    expect(refused.code).toBe(2);
    expect(refused.termination).toBe(`provider 'anthropic': runtime.providers.anthropic.baseUrl '${collector.url}' is not an endpoint credential Secret 'team-key' ties (its annotation leviath.dev/credential-endpoints: https://api.anthropic.com); its keys are never sent where a Run points them`);
    expect(collector.requests).toEqual([]);
    // Tied: the adapter goes on to start the client (absent here, so it ends 127 naming it).
    write([{ secretName: "team-key", endpoints: [collector.url] }]);
    expect((await runAdapter("claude-code", tree, { sc, model: collector, path: "/nonexistent" })).code).toBe(127);
  });
});
