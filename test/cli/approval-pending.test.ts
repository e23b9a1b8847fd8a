import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { AgentSpecSchema, type AgentSpecInput } from "../../src/api/agent.ts";
import { LeviathPolicySpecSchema } from "../../src/api/leviath-policy.ts";
import { startScriptedModelServer, type RecordedRequest, type ScriptStep, type StepSource } from "../../src/model-server/scripted-model-server.ts";
import { CLAUDE_MCP_SERVER } from "../../src/runtime/adapters/claude-code.ts";
import { CODEX_MCP_SERVER } from "../../src/runtime/adapters/codex.ts";
import type { RuntimeKind } from "../../src/runtime/adapters/launch.ts";
import { buildRunPolicy } from "../../src/policy/run-policy-merge.ts";
import { CLAUDE_CODE, CODEX, ensureClient, OPENAI_AGENTS, type ClientPackage } from "../clients/install-client.ts";
import { runAdapter, textOf } from "./adapter-harness.ts";
import { lastToolOutput, pathWith } from "./runtime-scenario.ts";
import { get, makeTempDir, parseJsonLines, post, startSidecar } from "./sidecar-harness.ts";

// A prompt answered after the client's own limit (issue 43), with real clients (pinned, from npm, unmodified)
// started by `leviath adapter <kind>` against the real sidecar and the scripted model server. Each client's MCP
// request timeout is cut to 3 s (a wrapper on the PATH, as approval-wait.ts does: a knob of the test): a call held
// on its prompt would be given up at 3 s. Here the policy's `limits.promptHoldSeconds` of 1 answers it first:
// - the OpenAI Agents SDK (its MCP client is the v2 SDK's, on 2026-07-28) gets `input_required` and retries the same
//   call itself; the person allows after the 3 s, and the call runs once: the model sees its output. A prompt nobody
//   answers is refused at the interaction timeout while the SDK still retries, and nothing runs.
// - Claude Code, which speaks 2026-07-28 too, at the adapter's settings: its retries of the same call, each HTTP
//   exchange at most a leg long, and the allow after 3 s: the call runs once.
// - Codex (2025-era, its tool timeout cut to 3 s) gets the pending result naming the prompt; its model calls
//   `wait_for_approval`, which after the allow answers the call's output: it ran once.
// And for each client the prompt that is not allowed: denied after the 3 s, or never answered (the interaction
// timeout, cut to 6 s, ends the wait while the client still retries or waits), the call is refused with
// `approval-declined` or `approval-timed-out`, the model is told, the shell never ran, and an allow sent once the
// client is done finds nothing left to answer. And a Codex whose model never collects the pending call: its exit
// ends its session, which withdraws the call, so an allow after it runs nothing.
const AGENT = "pending";
const CLIENT_LIMIT_MS = 3000;

/** How one client is run: its kind, its program, the setting that cuts its timeout, how its model names a tool. */
interface PendingClient {
  readonly kind: RuntimeKind;
  readonly program: string;
  readonly limitLine: string;
  /** Arguments the wrapper puts after the program's first one (Codex's `-c` settings). */
  readonly extraArgs?: string;
  readonly toolName: (tool: string) => string;
  readonly model?: string;
}

const AGENTS_SDK: PendingClient = { kind: "openai-agents", program: "leviath-openai-agents", limitLine: `export LEVIATH_MCP_TIMEOUT_MS=${CLIENT_LIMIT_MS}`, toolName: (t) => t, model: "openai/gpt-test" };
const CODEX_CLIENT: PendingClient = {
  kind: "codex", program: "codex", limitLine: "", extraArgs: `-c mcp_servers.${CODEX_MCP_SERVER}.tool_timeout_sec=${CLIENT_LIMIT_MS / 1000}`,
  toolName: (t) => `mcp__${CODEX_MCP_SERVER}__${t}`, model: "openai/gpt-6.2-sol",
};
/** Claude Code at the adapter's own settings: its tool timeout bounds the whole call, retries included. */
const CLAUDE: PendingClient = { kind: "claude-code", program: "claude", limitLine: "", toolName: (t) => `mcp__${CLAUDE_MCP_SERVER}__${t}` };

/** The text of the last tool result in a model request (either provider's protocol). */
function lastResultIn(request: Pick<RecordedRequest, "protocol" | "body"> | undefined): string {
  if (request === undefined) return "";
  if (request.protocol !== "anthropic") return lastToolOutput(request as RecordedRequest);
  const messages = (request.body["messages"] ?? []) as { content: { type: string; content?: unknown }[] | string }[];
  const last = messages.at(-1)?.content;
  return typeof last === "string" || last === undefined ? "" : last.filter((b) => b.type === "tool_result").map((b) => textOf(b.content)).join("\n");
}

/**
 * A model that runs `command`, then, while the last result is a pending one, collects it with wait_for_approval
 * (the first time once `allowed`, each wait held at most the leg's second), then answers.
 */
function pendingModel(c: PendingClient, command: string, allowed: Promise<unknown>, collect: boolean): StepSource {
  let n = 0;
  let waits = 0;
  return {
    remaining: () => Infinity,
    next(request): ScriptStep | undefined {
      n++;
      if (n === 1) return { turn: { calls: [{ name: c.toolName("shell"), args: { command } }] } };
      const approval = /waits for approval '([^']+)'/.exec(lastResultIn(request))?.[1];
      if (collect && approval !== undefined && waits++ < 15) return { turn: { calls: [{ name: c.toolName("wait_for_approval"), args: { approval } }] }, ...(waits === 1 ? { after: allowed } : {}) };
      return { turn: { text: "Done." } };
    },
  };
}

/**
 * How the person answers: allows or denies once the client's own limit has passed, never (the interaction timeout
 * ends the wait; then, once the client is done, an allow comes too late), or only after the client ended without
 * collecting the call (its model does not call wait_for_approval).
 */
type Answer = "allowOnce" | "deny" | "never" | "afterExit";

/** What one run left: the marker file, the model's last tool result, the shell rows of the audit, the late allow's answer. */
interface PendingRun { marker: string; output: string; records: Record<string, unknown>[]; code: number | null; answeredAfterMs: number; requests: number; late?: { status: number; code: string | undefined } }

async function runPending(c: PendingClient, bin: string, answer: Answer): Promise<PendingRun> {
  const root = makeTempDir("leviath-pending-openai-agents-");
  const tree = { dir: root, work: join(root, "work"), home: join(root, "home"), runtimeConfig: join(root, "runtime.json") };
  for (const d of [tree.work, tree.home, join(root, "wrapper")]) mkdirSync(d, { recursive: true });
  const agent: AgentSpecInput = { runtime: { kind: c.kind }, agent: { name: AGENT } };
  // Unanswered: refused at 6 s, within the SDK's 10 rounds of (1 s held + 0.25 s paced).
  const interactionTimeoutSeconds = answer === "never" ? 6 : 600;
  const policy = LeviathPolicySpecSchema.parse({ ceilings: { runtimeKinds: [c.kind] }, toolPermissions: { shell: "ask" }, limits: { interactionTimeoutSeconds, promptHoldSeconds: 1 } });
  writeFileSync(join(root, "run-policy.json"), JSON.stringify(buildRunPolicy(AgentSpecSchema.parse(agent), { key: `default/${AGENT}`, name: AGENT }, policy, { mode: "interactive", agentGeneration: 1 })));
  writeFileSync(tree.runtimeConfig, JSON.stringify({ agent, run: { task: "Append to the marker.", mode: "interactive", ...(c.model === undefined ? {} : { runtime: { model: c.model } }) } }));
  const wrapper = join(root, "wrapper", c.program);
  const real = join(bin, c.program);
  const exec = c.extraArgs === undefined ? `exec '${real}' "$@"` : `first="$1"; shift; exec '${real}' "$first" ${c.extraArgs} "$@"`;
  writeFileSync(wrapper, `#!/bin/sh\n${c.limitLine}\n${exec}\n`);
  chmodSync(wrapper, 0o755);
  const marker = join(tree.work, "marker");
  const audit = join(root, "audit");
  const sc = await startSidecar(["--run-policy", join(root, "run-policy.json"), "--run", AGENT, "--workdir", tree.work, "--audit-dir", audit]);
  let allow = (): void => undefined;
  const allowed = new Promise<void>((r) => (allow = r));
  const model = await startScriptedModelServer(pendingModel(c, `echo ran >> ${marker} && cat ${marker}`, allowed, answer !== "afterExit"));
  try {
    const running = runAdapter(c.kind, tree, { sc, model, path: `${join(root, "wrapper")}:${pathWith(bin)}`, args: ["--interaction-timeout-seconds", String(interactionTimeoutSeconds)] });
    // The approval token's file is printed after the address the harness waits for.
    let tokenFile: string | undefined;
    while ((tokenFile = /approval token file: (\S+)\n/.exec(sc.stdout())?.[1]) === undefined) await new Promise((r) => setTimeout(r, 50));
    const token = readFileSync(tokenFile, "utf8").trim();
    const decide = (id: string, decision: "allowOnce" | "deny") => post<{ code?: string }>(`${sc.url}/v1/approvals/${id}`, { decision }, { authorization: `Bearer ${token}` });
    const pending = async () => (await get<{ approvals: { id: string; prompt: string }[] }>(`${sc.url}/v1/approvals`)).body.approvals.find((p) => p.prompt.includes(marker));
    let prompt: { id: string } | undefined;
    while ((prompt = await pending()) === undefined) await new Promise((r) => setTimeout(r, 50));
    let answeredAfterMs = 0;
    if (answer !== "afterExit") {
      const asked = Date.now();
      // The scenario: the answer comes after the client's own request limit has passed since the prompt was raised.
      while (Date.now() - asked <= CLIENT_LIMIT_MS) await new Promise((r) => setTimeout(r, 100));
      answeredAfterMs = Date.now() - asked;
      if (answer !== "never") expect((await decide(prompt.id, answer)).status).toBe(200);
    }
    allow();
    const exit = await running;
    const lateAnswer = answer === "never" || answer === "afterExit" ? await decide(prompt.id, "allowOnce") : undefined;
    const late = lateAnswer && { status: lateAnswer.status, code: lateAnswer.body.code };
    const records = parseJsonLines(readFileSync(join(audit, AGENT, "stages", "0", "decisions.jsonl"), "utf8")).filter((d) => d["tool_name"] === "shell");
    return { marker, output: lastResultIn(model.requests.at(-1)), records, code: exit.code, answeredAfterMs, requests: model.requests.length, ...(late === undefined ? {} : { late }) };
  } finally {
    allow();
    await model.close();
    await sc.stop();
  }
}

/** The cases of one client, its package installed once (cached) before them. */
function describeClient(title: string, pkg: ClientPackage, cases: (bin: () => string) => void): void {
  describe(title, { timeout: 300_000 }, () => {
    let bin = "";
    beforeAll(() => {
      bin = ensureClient(pkg);
    }, 600_000);
    cases(() => bin);
  });
}

/**
 * Answered after the client's own limit, the call ran once (one line in the marker, one allow in the audit), the
 * model saw its output in its last request, and the client ended normally after `requests` model turns.
 */
function expectRanOnce(run: Awaited<ReturnType<typeof runPending>>, requests: number): void {
  expect(run.answeredAfterMs).toBeGreaterThan(CLIENT_LIMIT_MS);
  expect(run.output).toContain("ran");
  expect(readFileSync(run.marker, "utf8")).toBe("ran\n");
  expect(run.records.map((d) => [d["decision"], d["decision_source"]])).toEqual([["ask", "permission_ask"], ["allow", "user_approved"]]);
  expect([run.requests, run.code]).toEqual([requests, 0]);
}

/**
 * Refused with `code` (denied, or never answered within the interaction timeout): the model was told, the shell
 * never ran (no marker once the sidecar has stopped), the audit has the ask and its refusal and nothing after, and
 * the client ended normally. Never answered, the allow that came after the client was done found no prompt to answer
 * (the prompt ended with the wait: 404 `unknown-approval`).
 */
function expectRefused(run: PendingRun, code: "approval-declined" | "approval-timed-out"): void {
  expect(run.output).toContain("[denied] User declined tool call 'shell'.");
  expect(existsSync(run.marker)).toBe(false);
  expect(run.records.map((d) => [d["decision"], d["code"]])).toEqual([["ask", undefined], ["deny", code]]);
  expect(run.code).toBe(0);
  expect(run.late).toEqual(code === "approval-timed-out" ? { status: 404, code: "unknown-approval" } : undefined);
}

describeClient("leviath adapter openai-agents: a prompt answered after the client's own limit", OPENAI_AGENTS, (bin) => {
  it("input_required, the SDK's own retries, the allow past its 3 s limit: the call runs once and the model sees its output", async () => {
    const run = await runPending(AGENTS_SDK, bin(), "allowOnce");
    expectRanOnce(run, 2);
  });

  it("one nobody answers is refused at the interaction timeout, the model is told, nothing ran, and an allow after it runs nothing", async () => {
    expectRefused(await runPending(AGENTS_SDK, bin(), "never"), "approval-timed-out");
  });

  it("one denied after the client's limit is refused, the model is told, and nothing ran", async () => {
    expectRefused(await runPending(AGENTS_SDK, bin(), "deny"), "approval-declined");
  });
});

describeClient("leviath adapter claude-code: a prompt answered over several short exchanges", CLAUDE_CODE, (bin) => {
  // Claude Code speaks 2026-07-28 too, and its MCP_TOOL_TIMEOUT bounds the whole call, retries included (cut to 3 s
  // it cancels a retry leg, and the call is withdrawn), so it runs at the adapter's settings here. What it gains is
  // that no HTTP exchange lasts longer than a leg's hold: its own ~6 minute cut of one exchange never comes.
  it("input_required legs of 1 s, Claude Code's own retries, the allow after 3 s: the call runs once and the model sees its output", async () => {
    const run = await runPending(CLAUDE, bin(), "allowOnce");
    expectRanOnce(run, 2);
  });

  it("one nobody answers: its retries get the refusal at the interaction timeout, the model is told, nothing ran, and an allow after it runs nothing", async () => {
    expectRefused(await runPending(CLAUDE, bin(), "never"), "approval-timed-out");
  });

  it("one denied after 3 s: the next retry gets the refusal, the model is told, and nothing ran", async () => {
    expectRefused(await runPending(CLAUDE, bin(), "deny"), "approval-declined");
  });
});

describeClient("leviath adapter codex: a prompt answered after the client's own limit", CODEX, (bin) => {
  it("a pending result, wait_for_approval, the allow past its 3 s limit: the call runs once and the model sees its output", async () => {
    const run = await runPending(CODEX_CLIENT, bin(), "allowOnce");
    // Three model turns: the shell call (answered pending), wait_for_approval (its result), the final answer.
    expectRanOnce(run, 3);
  });

  it("one nobody answers: wait_for_approval answers the refusal at the interaction timeout, the model is told, nothing ran, and an allow after it runs nothing", async () => {
    expectRefused(await runPending(CODEX_CLIENT, bin(), "never"), "approval-timed-out");
  });

  it("one denied past its 3 s limit: wait_for_approval answers the refusal, the model is told, and nothing ran", async () => {
    expectRefused(await runPending(CODEX_CLIENT, bin(), "deny"), "approval-declined");
  });

  it("one its model never collects: Codex ends its session on exit, the call is withdrawn, and the allow after that is refused and runs nothing", async () => {
    // On main the call stayed pending after Codex was gone, and this allow ran it (200, the marker written).
    const run = await runPending(CODEX_CLIENT, bin(), "afterExit");
    expect(run.output).toContain("[pending] The call to 'shell' has not run");
    expect(run.late).toEqual({ status: 410, code: "approval-withdrawn" });
    expect(existsSync(run.marker)).toBe(false);
    expect(run.records.map((d) => [d["decision"], d["code"], d["gave_up"]])).toEqual([["ask", undefined, undefined], ["deny", "client-gave-up", "cancelled"]]);
    expect(run.code).toBe(0);
  });});
