// A two-stage Agent run by real clients (issue 30, item 3): `leviath adapter <kind>` starts the client once per
// stage, with the stage's instructions, against the real standalone sidecar and the stand-in model. In `survey`
// the model reads the notes and picks `digest` with the sidecar's next_stage; the client ends its turn and exits;
// the adapter reads the stage the sidecar is in (GET /v1/stage) and starts the client again in `digest` (an output
// stage) with the task and survey's last message, where the model lists the workspace and answers. The audit has
// each call under its stage, and no request of survey's offered a tool of digest's. Claude Code runs twice: under its
// own adapter, and as kind mcp-command under the admin's template that docs/runtimes.md shows.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { AgentSpecSchema, type AgentSpecInput } from "../../src/api/agent.ts";
import { LeviathPolicySpecSchema } from "../../src/api/leviath-policy.ts";
import { buildRunPolicy } from "../../src/policy/run-policy-merge.ts";
import { CLAUDE_MCP_SERVER } from "../../src/runtime/adapters/claude-code.ts";
import { CODEX_MCP_SERVER } from "../../src/runtime/adapters/codex.ts";
import type { RuntimeKind } from "../../src/runtime/adapters/launch.ts";
import { MCP_COMMAND_SERVER } from "../../src/runtime/adapters/mcp-command.ts";
import { OPENAI_AGENTS_COMMAND } from "../../src/runtime/adapters/openai-agents.ts";
import type { RuntimeTemplate } from "../../src/api/runtime-templates.ts";
import { CLAUDE_CODE, CODEX, ensureClient, OPENAI_AGENTS, type ClientPackage } from "../clients/install-client.ts";
import { startScriptedModelServer, type RecordedRequest, type ScriptStep } from "../../src/model-server/scripted-model-server.ts";
import { runAdapter, type AdapterExit } from "./adapter-harness.ts";
import { readMcpCommandRecipe } from "./mcp-command-recipe.ts";
import { pathWith } from "./runtime-scenario.ts";
import { makeTempDir, parseJsonLines, startSidecar } from "./sidecar-harness.ts";

const AGENT = "stages";
const SURVEY_PROMPT = "Survey the notes before anything is written.";
const DIGEST_PROMPT = "Write the digest of what the survey found.";
const SURVEYED = "Surveyed: the notes say notes.";
const FINAL_ANSWER = "Digest: notes.";
// Codex's readers of MCP resources (they ask only the sidecar): offered beside its MCP namespace.
const CODEX_RESOURCE_READERS = new Set(["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"]);

/** A client as the test runs it: how its model names a sidecar tool, and the Run's model (none: the client's default). */
interface StageClient { readonly kind: RuntimeKind; readonly pkg: ClientPackage; readonly program: string; readonly toolName: (t: string) => string; readonly model?: string; readonly template?: RuntimeTemplate }

/** What a run left behind. */
interface StagesRun { outcome: AdapterExit; requests: RecordedRequest[]; unused: number; decisions: (stage: number) => Record<string, unknown>[] }

/** What a variant changes: the edge's transform, submit_output's clearance, the model's script (default: the whole walk). */
interface Variant { readonly transform?: "clear"; readonly clearance?: "public" | "private"; readonly script?: (client: StageClient) => ScriptStep[] }

/** The model's walk through both stages. */
const WALK = (client: StageClient): ScriptStep[] => [
  { turn: { calls: [{ name: client.toolName("read_file"), args: { path: "notes.md" } }] } },
  { turn: { calls: [{ name: client.toolName("next_stage"), args: { stage: "digest" } }] } },
  { turn: { text: SURVEYED } },
  { turn: { calls: [{ name: client.toolName("list_dir"), args: { path: "." } }] } },
  { turn: { text: FINAL_ANSWER } },
];

async function runStagesScenario(client: StageClient, bin: string, variant: Variant = {}): Promise<StagesRun> {
  const root = makeTempDir(`leviath-stages-${client.kind}-`);
  const tree = { dir: root, work: join(root, "work"), home: join(root, "home"), runtimeConfig: join(root, "runtime.json") };
  mkdirSync(tree.home, { recursive: true });
  mkdirSync(tree.work, { recursive: true });
  writeFileSync(join(tree.work, "notes.md"), "notes\n");
  const agent: AgentSpecInput = {
    runtime: { kind: client.kind, ...(client.template ? { template: client.template.name } : {}) }, agent: { name: AGENT }, security: { taintTracking: true },
    stages: [
      { name: "survey", availableTools: ["read_file"], runtime: { system_prompt: SURVEY_PROMPT, transitions: { digest: { hint: "the notes are read", ...(variant.transform ? { transform: variant.transform } : {}) } } } },
      { name: "digest", availableTools: ["list_dir", "submit_output"], runtime: { mode: "output", system_prompt: DIGEST_PROMPT, transitions: {} } },
    ],
  };
  const policy = LeviathPolicySpecSchema.parse({ ceilings: { runtimeKinds: [client.kind] }, taint: { toolOverrides: { submit_output: { clearance: variant.clearance ?? "private" } } } });
  writeFileSync(join(root, "run-policy.json"), JSON.stringify(buildRunPolicy(AgentSpecSchema.parse(agent), { key: `default/${AGENT}`, name: AGENT }, policy, { mode: "headless", agentGeneration: 1 })));
  // runtime.json as the controller pins it: for mcp-command, with the policy's template.
  writeFileSync(tree.runtimeConfig, JSON.stringify({ agent, run: { task: "Digest notes.md.", mode: "headless", ...(client.model ? { runtime: { model: client.model } } : {}) }, ...(client.template ? { template: client.template } : {}) }));
  const audit = join(root, "audit");
  const sc = await startSidecar(["--run-policy", join(root, "run-policy.json"), "--run", AGENT, "--workdir", tree.work, "--audit-dir", audit]);
  const model = await startScriptedModelServer((variant.script ?? WALK)(client));
  try {
    const outcome = await runAdapter(client.kind, tree, { sc, model, path: pathWith(bin) });
    const decisions = (stage: number) => {
      const file = join(audit, AGENT, "stages", String(stage), "decisions.jsonl");
      return existsSync(file) ? parseJsonLines(readFileSync(file, "utf8")) : [];
    };
    return { outcome, requests: model.requests, unused: model.remaining(), decisions };
  } finally {
    await model.close();
    await sc.stop();
  }
}

/** The sidecar's tools a request offered the model, by their names at the sidecar. */
function offered(req: RecordedRequest | undefined, client: StageClient): string[] {
  type Tool = { type?: string; name?: string; tools?: { name: string }[]; function?: { name: string } };
  const tools = (req?.body["tools"] ?? []) as Tool[];
  const names = tools.flatMap((t) => (t.type === "namespace" ? (t.tools ?? []).map((n) => n.name) : [t.name ?? t.function?.name ?? ""]));
  const prefix = client.pkg === CLAUDE_CODE ? `mcp__${CLAUDE_MCP_SERVER}__` : "";
  return names.filter((n) => !CODEX_RESOURCE_READERS.has(n)).map((n) => n.slice(prefix.length)).sort();
}

const CLIENTS: StageClient[] = [
  { kind: "codex", pkg: CODEX, program: "codex", toolName: (t) => `mcp__${CODEX_MCP_SERVER}__${t}`, model: "openai/gpt-6.2-sol" },
  { kind: "openai-agents", pkg: OPENAI_AGENTS, program: OPENAI_AGENTS_COMMAND, toolName: (t) => t, model: "openai/gpt-test" },
  { kind: "claude-code", pkg: CLAUDE_CODE, program: "claude", toolName: (t) => `mcp__${CLAUDE_MCP_SERVER}__${t}` },
  // Claude Code again, configured only by the admin's template docs/runtimes.md shows (its MCP server is named leviath too).
  { kind: "mcp-command", pkg: CLAUDE_CODE, program: "claude", toolName: (t) => `mcp__${MCP_COMMAND_SERVER}__${t}`, template: readMcpCommandRecipe().policy.runtimeTemplates[0]! },
];

describe.each(CLIENTS)("a two-stage Agent with $kind", (client) => {
  let run: StagesRun;
  beforeAll(async () => {
    run = await runStagesScenario(client, ensureClient(client.pkg));
  }, 900_000);

  it("runs the client once per stage and ends with the digest's answer as the Run's result, every step taken", () => {
    expect(run.outcome.termination, run.outcome.stderr).toBe(`${client.program} finished; its final answer (${Buffer.byteLength(FINAL_ANSWER)} bytes) is the Run's result`);
    expect(run.outcome.code).toBe(0);
    expect(run.outcome.stdout.match(/starting \S+ in .*, stage '(\w+)'/g)?.map((l) => /stage '(\w+)'/.exec(l)?.[1])).toEqual(["survey", "digest"]);
    expect(run.unused).toBe(0);
    expect(run.requests).toHaveLength(5);
  });

  it("the audit has each call under its stage: the read in survey's, the move, the listing and the handover in digest's", () => {
    const rows = (stage: number) => run.decisions(stage).map((d) => [d["tool_name"], d["decision"], d["decision_source"], d["from_stage"]]);
    expect(rows(0)).toEqual([["read_file", "allow", "auto_allow", undefined]]);
    expect(rows(1)).toEqual([["next_stage", "stage", "llm_choice", "survey"], ["list_dir", "allow", "auto_allow", undefined], ["submit_output", "allow", "auto_allow", undefined]]);
  });

  it("survey offered only its tools and the move; digest only its own, and no way back", () => {
    expect(offered(run.requests[0], client)).toEqual(["next_stage", "read_file"]);
    expect(offered(run.requests[1], client)).toEqual(["next_stage", "read_file"]);
    for (const n of [3, 4]) expect(offered(run.requests[n], client)).toEqual(["list_dir", "submit_output"]);
  });

  it("each stage's client got that stage's instructions, and digest's the task with survey's last message", () => {
    const sent = run.requests.map((r) => JSON.stringify(r.body));
    for (const n of [0, 1]) expect([sent[n]!.includes(SURVEY_PROMPT), sent[n]!.includes(DIGEST_PROMPT)]).toEqual([true, false]);
    for (const n of [3, 4]) expect([sent[n]!.includes(SURVEY_PROMPT), sent[n]!.includes(DIGEST_PROMPT)]).toEqual([false, true]);
    expect(sent[0]).toContain("call next_stage with the stage to go to");
    expect(sent[3]).toContain(JSON.stringify(`Stage 'survey' ended with:\n${SURVEYED}`).slice(1, -1));
  });
});

describe("the stage loop with the Agents SDK program", () => {
  const agents = CLIENTS.find((c) => c.kind === "openai-agents")!;
  let bin = "";
  beforeAll(() => {
    bin = ensureClient(agents.pkg);
  }, 600_000);

  it("fails closed when the client ends a stage that needs the model's choice without one: no second start, no result", async () => {
    const script = (c: StageClient): ScriptStep[] => [{ turn: { calls: [{ name: c.toolName("read_file"), args: { path: "notes.md" } }] } }, { turn: { text: SURVEYED } }];
    const run = await runStagesScenario(agents, bin, { script });
    expect([run.outcome.code, run.outcome.termination]).toEqual([1, "stage 'survey' ended without next_stage: the model chose none of digest"]);
    expect(run.outcome.stdout.match(/starting \S+ in /g)).toHaveLength(1);
    expect(run.decisions(0).map((d) => d["tool_name"])).toEqual(["read_file"]);
    expect(run.decisions(1)).toEqual([]);
  }, 120_000);

  it("a clear transition evicts what survey read at the sidecar: the answer a kept context's taint blocks is handed over", async () => {
    const script = (c: StageClient): ScriptStep[] => [...WALK(c).slice(0, 3), { turn: { text: FINAL_ANSWER } }];
    const kept = await runStagesScenario(agents, bin, { clearance: "public", script });
    expect(kept.outcome.code).toBe(1);
    expect(kept.outcome.termination).toMatch(/^the final answer was not stored: \[blocked\] Tool 'submit_output' would send Internal-level data/);
    const cleared = await runStagesScenario(agents, bin, { clearance: "public", script, transform: "clear" });
    expect([cleared.outcome.code, cleared.outcome.stdout]).toEqual([0, expect.stringMatching(/context cleared: 1 entries evicted, context taint now public/)]);
    expect(cleared.decisions(1).map((d) => [d["tool_name"], d["decision"]])).toEqual([["next_stage", "stage"], ["submit_output", "allow"]]);
    // Cleared, digest's client is given the task alone, not survey's last message.
    expect(JSON.stringify(cleared.requests[3]?.body)).not.toContain("Stage 'survey' ended with");
    expect(JSON.stringify(kept.requests[3]?.body)).toContain("Stage 'survey' ended with");
  }, 120_000);
});
