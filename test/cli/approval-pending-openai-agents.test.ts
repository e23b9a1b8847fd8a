import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { AgentSpecSchema, type AgentSpecInput } from "../../src/api/agent.ts";
import { LeviathPolicySpecSchema } from "../../src/api/leviath-policy.ts";
import { startScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { buildRunPolicy } from "../../src/policy/run-policy-merge.ts";
import { ensureClient, OPENAI_AGENTS } from "../clients/install-client.ts";
import { runAdapter } from "./adapter-harness.ts";
import { lastToolOutput, pathWith } from "./runtime-scenario.ts";
import { get, makeTempDir, parseJsonLines, post, startSidecar } from "./sidecar-harness.ts";

// A prompt answered after the client's own limit (issue 43), with the real OpenAI Agents SDK (pinned, from npm,
// unmodified; its MCP client is the v2 SDK's, which speaks 2026-07-28) started by `leviath adapter openai-agents`
// against the real sidecar and the scripted model server. The client's MCP request timeout is cut to 3 s (a
// wrapper on the PATH, as approval-wait.ts does: a knob of the test). A held call would be given up at 3 s; here
// each leg is held 1 s (`limits.promptHoldSeconds`) and answered `input_required`, the SDK retries the same call,
// the person allows it after the 3 s have passed, and the call runs once: the model sees its output. A prompt
// nobody answers is refused at the interaction timeout while the SDK still retries, and nothing runs.
const AGENT = "pending";
const CLIENT_LIMIT_MS = 3000;

async function runPending(bin: string, decide: "allowOnce" | "none"): Promise<{ marker: string; output: string; records: Record<string, unknown>[]; code: number | null; answeredAfterMs: number }> {
  const root = makeTempDir("leviath-pending-openai-agents-");
  const tree = { dir: root, work: join(root, "work"), home: join(root, "home"), runtimeConfig: join(root, "runtime.json") };
  for (const d of [tree.work, tree.home, join(root, "wrapper")]) mkdirSync(d, { recursive: true });
  const agent: AgentSpecInput = { runtime: { kind: "openai-agents" }, agent: { name: AGENT } };
  // Unanswered: refused at 6 s, within the SDK's 10 rounds of (1 s held + 0.25 s paced).
  const interactionTimeoutSeconds = decide === "none" ? 6 : 600;
  const policy = LeviathPolicySpecSchema.parse({ ceilings: { runtimeKinds: ["openai-agents"] }, toolPermissions: { shell: "ask" }, limits: { interactionTimeoutSeconds, promptHoldSeconds: 1 } });
  writeFileSync(join(root, "run-policy.json"), JSON.stringify(buildRunPolicy(AgentSpecSchema.parse(agent), { key: `default/${AGENT}`, name: AGENT }, policy, { mode: "interactive", agentGeneration: 1 })));
  writeFileSync(tree.runtimeConfig, JSON.stringify({ agent, run: { task: "Append to the marker.", mode: "interactive", runtime: { model: "openai/gpt-test" } } }));
  const wrapper = join(root, "wrapper", "leviath-openai-agents");
  writeFileSync(wrapper, `#!/bin/sh\nexport LEVIATH_MCP_TIMEOUT_MS=${CLIENT_LIMIT_MS}\nexec '${join(bin, "leviath-openai-agents")}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  const marker = join(tree.work, "marker");
  const audit = join(root, "audit");
  const sc = await startSidecar(["--run-policy", join(root, "run-policy.json"), "--run", AGENT, "--workdir", tree.work, "--audit-dir", audit]);
  const model = await startScriptedModelServer([{ turn: { calls: [{ name: "shell", args: { command: `echo ran >> ${marker} && cat ${marker}` } }] } }, { turn: { text: "Done." } }]);
  try {
    const running = runAdapter("openai-agents", tree, { sc, model, path: `${join(root, "wrapper")}:${pathWith(bin)}`, args: ["--interaction-timeout-seconds", String(interactionTimeoutSeconds)] });
    // The approval token's file is printed after the address the harness waits for.
    let tokenFile: string | undefined;
    while ((tokenFile = /approval token file: (\S+)\n/.exec(sc.stdout())?.[1]) === undefined) await new Promise((r) => setTimeout(r, 50));
    const token = readFileSync(tokenFile, "utf8").trim();
    const pending = async () => (await get<{ approvals: { id: string; prompt: string }[] }>(`${sc.url}/v1/approvals`)).body.approvals.find((p) => p.prompt.includes(marker));
    let prompt: { id: string } | undefined;
    while ((prompt = await pending()) === undefined) await new Promise((r) => setTimeout(r, 50));
    const asked = Date.now();
    // The scenario: the answer comes after the client's own request limit has passed since the prompt was raised.
    while (Date.now() - asked <= CLIENT_LIMIT_MS) await new Promise((r) => setTimeout(r, 100));
    const answeredAfterMs = Date.now() - asked;
    if (decide === "allowOnce") expect((await post(`${sc.url}/v1/approvals/${prompt.id}`, { decision: "allowOnce" }, { authorization: `Bearer ${token}` })).status).toBe(200);
    const exit = await running;
    const records = parseJsonLines(readFileSync(join(audit, AGENT, "stages", "0", "decisions.jsonl"), "utf8")).filter((d) => d["tool_name"] === "shell");
    return { marker, output: lastToolOutput(model.requests[1]), records, code: exit.code, answeredAfterMs };
  } finally {
    await model.close();
    await sc.stop();
  }
}

describe("leviath adapter openai-agents: a prompt answered after the client's own limit", { timeout: 300_000 }, () => {
  let bin = "";
  beforeAll(() => {
    bin = ensureClient(OPENAI_AGENTS);
  }, 600_000);

  it("input_required, the SDK's own retries, the allow past its 3 s limit: the call runs once and the model sees its output", async () => {
    const run = await runPending(bin, "allowOnce");
    expect(run.answeredAfterMs).toBeGreaterThan(CLIENT_LIMIT_MS);
    expect(run.output).toContain("ran");
    expect(readFileSync(run.marker, "utf8")).toBe("ran\n");
    expect(run.records.map((d) => [d["decision"], d["decision_source"]])).toEqual([["ask", "permission_ask"], ["allow", "user_approved"]]);
    expect(run.code).toBe(0);
  });

  it("one nobody answers is refused at the interaction timeout, the model is told, and nothing ran", async () => {
    const run = await runPending(bin, "none");
    expect(run.output).toContain("[denied] User declined tool call 'shell'.");
    expect(existsSync(run.marker)).toBe(false);
    expect(run.records.map((d) => [d["decision"], d["code"]])).toEqual([["ask", undefined], ["deny", "approval-timed-out"]]);
    expect(run.code).toBe(0);
  });
});
