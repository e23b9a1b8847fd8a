// `leviath agent` fills the blueprint's regions at spawn through the real standalone sidecar (`POST /v1/seeds`),
// before the entry stage's model loop, and never reads a file or runs a command itself. With the scripted model
// server (the one stand-in): the region contents reach the model in its first request, each labelled by the
// sidecar and audited; a seed the read-path fence refuses fails the spawn with upstream's message and exit 3,
// before any model request, and the refused file's content goes nowhere.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { describe, expect, it } from "vitest";
import { startScriptedModelServer, type ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { runAgentProcess, useAgentParts } from "./agent-process.ts";
import { leviath } from "./run-cli.ts";
import { makeTempDir, parseJsonLines, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

const stage = `[stages.main]
mode = "output"
model = { models = [{ provider = "anthropic", model = "claude-test" }] }
max_iterations = 2
system_prompt = "Summarise the regions."
`;

interface Tree { dir: string; work: string; runtimeConfig: string; sidecarArgs: string[] }

function makeTree(regions: string): Tree {
  const dir = makeTempDir("leviath-agent-seeds-");
  const work = join(dir, "work");
  mkdirSync(work);
  mkdirSync(join(dir, "bp", "prompts"), { recursive: true });
  writeFileSync(join(work, "README.md"), "the readme says: ship on friday\n");
  writeFileSync(join(work, "CHANGES"), "v2: faster\n");
  writeFileSync(join(dir, "secret.txt"), "the secret: hunter2\n");
  writeFileSync(join(dir, "bp", "prompts", "style.md"), "write tersely\n");
  writeFileSync(join(dir, "bp", "agent.leviath"), `[agent]\nname = "seeded"\n\n${regions}\n${stage}`);
  writeFileSync(join(dir, "config.toml"), "[safe_commands]\nshell = ['cat CHANGES', 'false']\n");
  const imported = leviath(["import", join(dir, "bp", "agent.leviath")]);
  expect(imported.status, imported.stderr).toBe(0);
  const runtimeConfig = join(dir, "runtime.json");
  writeFileSync(runtimeConfig, JSON.stringify({ agent: (parseYaml(imported.stdout) as { spec: unknown }).spec, run: { task: "Summarise.", inputs: {}, mode: "interactive" } }));
  return { dir, work, runtimeConfig, sidecarArgs: ["--agent", join(dir, "bp"), "--config", join(dir, "config.toml"), "--workdir", work, "--audit-dir", join(dir, "audit"), "--run", "seeded"] };
}

const runAgent = (tree: Tree, sc: SidecarProcess, model: ScriptedModelServer) => runAgentProcess(tree.dir, tree.runtimeConfig, sc, model);

const seedRecords = (tree: Tree) => parseJsonLines(readFileSync(join(tree.dir, "audit", "seeded", "stages", "0", "decisions.jsonl"), "utf8")).filter((r) => r["tool_name"] === "seed");

const parts = useAgentParts();

describe("leviath agent fills regions through /v1/seeds", { timeout: 300_000 }, () => {
  it("puts each region's content before the model's first turn, labelled and audited by the sidecar", async () => {
    const tree = makeTree(`[context.regions.readme]
kind = "pinned"
seed = { files = ["README.md"] }

[context.regions.changes]
seed = { command = "cat CHANGES" }

[context.regions.style]
seed = { files = ["blueprint:prompts/style.md"] }

[context.regions.rules]
seed = { literal = "never guess" }

[context.regions.flaky]
seed = { command = "false" }
`);
    const model = parts.model = await startScriptedModelServer([{ turn: { calls: [{ name: "submit_output", args: { output: "ship on friday; v2 is faster" } }] } }]);
    const sc = parts.sc = await startSidecar(tree.sidecarArgs);
    const r = await runAgent(tree, sc, model);
    expect(r.code, r.stderr).toBe(0);
    const messages = JSON.stringify(model.requests[0]!.body["messages"]);
    expect(messages).toContain("Region 'readme':\\nthe readme says: ship on friday\\n");
    expect(messages).toContain("Region 'changes':\\nv2: faster\\n");
    expect(messages).toContain("Region 'style':\\nwrite tersely\\n");
    expect(messages).toContain("Region 'rules':\\nnever guess");
    // A seed that is not required and fails (a non-zero exit) leaves its region empty and the run goes on.
    expect(messages).not.toContain("Region 'flaky'");
    expect(r.stdout).toContain("[run] region 'flaky': seed refused (seed-command-failed): region 'flaky': seed command 'false' exited with code 1");
    expect(r.stdout).toMatch(/\[run\] region 'readme' filled: 32 bytes, label \w+, context taint \w+/);
    expect(r.stdout).not.toContain("ship on friday");
    // The sidecar decided and audited each one (the literal is the blueprint's own text: labelled, not fetched).
    expect(seedRecords(tree).map((d) => [(d["seed"] as { region: string }).region, d["decision"], d["decision_source"], (d["seed"] as { outcome: string }).outcome])).toEqual([
      ["readme", "allow", "workdir", "filled"], ["changes", "allow", "safe_commands", "filled"], ["style", "allow", "blueprint", "filled"], ["flaky", "allow", "safe_commands", "failed"],
    ]);
  });

  it("fails the spawn on a seed the fence refuses, with upstream's message and exit 3, before any model request", async () => {
    const tree = makeTree(`[context.regions.readme]
seed = { files = ["README.md"] }

[context.regions.loot]
seed = { files = ["../secret.txt"] }
`);
    const model = parts.model = await startScriptedModelServer([{ turn: { calls: [{ name: "submit_output", args: { output: "x" } }] } }]);
    const sc = parts.sc = await startSidecar(tree.sidecarArgs);
    const r = await runAgent(tree, sc, model);
    const message = `region 'loot': seed path '../secret.txt' resolves outside the working directory (${tree.work}); grant it with [read_paths] in the blueprint and your config, or move it inside`;
    expect(r.code).toBe(3);
    expect(r.termination).toBe(message);
    expect(r.stderr).toContain(`leviath agent: ${message}`);
    expect(model.requests).toHaveLength(0);
    expect(r.stdout + r.stderr).not.toContain("hunter2");
    expect(seedRecords(tree).map((d) => [d["decision"], d["code"] ?? null])).toEqual([["allow", null], ["deny", "seed-outside-workdir"]]);
  });

  it("fails the spawn when a blueprint: seed escapes the blueprint's directory, and when a required region cannot be filled", async () => {
    const escape = makeTree(`[context.regions.loot]\nseed = { files = ["blueprint:../secret.txt"] }\n`);
    const model = parts.model = await startScriptedModelServer([]);
    let sc = parts.sc = await startSidecar(escape.sidecarArgs);
    const r = await runAgent(escape, sc, model);
    expect(r.code).toBe(3);
    expect(r.termination).toMatch(/^region 'loot': seed path 'blueprint:\.\.\/secret\.txt' .*no grant widens it$/);
    await sc.stop();
    const required = makeTree(`[context.regions.changes]\nrequired = true\nrequired_message = "the change log is needed"\nseed = { command = "false" }\n`);
    sc = parts.sc = await startSidecar(required.sidecarArgs);
    const q = await runAgent(required, sc, model);
    expect(q.code).toBe(3);
    expect(q.termination).toBe("the change log is needed");
    expect(model.requests).toHaveLength(0);
  });
});
