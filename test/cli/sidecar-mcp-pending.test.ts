import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { get, makeTempDir, post, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// Prompts that wait longer than a client (issue 43), against the real sidecar over real HTTP with the SDKs' real
// clients: on 2026-07-28 an ask is answered `input_required` and the client's retry is the same call, which runs
// exactly once after an allow; on 2025-era revisions, where the policy sets `limits.promptHoldSeconds`, an ask is
// a pending result naming the prompt and `wait_for_approval` collects the call. The prompts are answered on the
// same approval channel whatever the front-end (here the standalone endpoint with the approval token).

interface Pending {
  id: string;
  callId: string;
  tool: string;
  prompt: string;
}

/** A tool result as the clients hand it back (the 2026 client's `input_required` payload included). */
interface Answer {
  content?: { type: string; text?: string }[];
  isError?: boolean;
  resultType?: string;
  requestState?: string;
  _meta?: Record<string, unknown>;
}

const text = (r: Answer) => (r.content ?? []).map((c) => c.text ?? "").join("");

/** A sidecar whose shell asks, its prompts held `holdSecs` on /mcp (unset: as before) and expiring after `timeoutSecs`. */
async function start(name: string, limits: string): Promise<{ sc: SidecarProcess; work: string }> {
  const root = makeTempDir(`leviath-sidecar-mcp-pending-${name}-`);
  const work = join(root, "work");
  mkdirSync(work, { recursive: true });
  writeFileSync(join(root, "agent.leviath"), `[agent]\nname = '${name}'\n`);
  writeFileSync(join(root, "config.toml"), `[tool_permissions]\nshell = 'ask'\n\n[limits]\n${limits}\n`);
  const sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", work, "--audit-dir", join(root, "audit")]);
  return { sc, work };
}

let sc: SidecarProcess;
let work: string;

beforeAll(async () => {
  ({ sc, work } = await start("pending", "prompt_hold_secs = 0"));
}, 60_000);

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

/** Polls until `check` holds (or fails after `ms`, default 10 s, naming what was awaited). */
async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got !== undefined) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const promptFor = (s: SidecarProcess, marker: string) =>
  until(`the prompt of ${marker}`, async () => (await get<{ approvals: Pending[] }>(`${s.url}/v1/approvals`)).body.approvals.find((p) => p.prompt.includes(marker)));

/** Answers a prompt as the person at the terminal would (the approval token, the same channel as every front-end). */
async function answer(s: SidecarProcess, id: string, decision: "allowOnce" | "deny"): Promise<void> {
  const r = await post(`${s.url}/v1/approvals/${id}`, { decision }, { authorization: `Bearer ${s.token}` });
  expect(r.status).toBe(200);
}

/** A command that appends one line to `file` in the workdir each time it runs. */
const appendTo = (file: string) => `echo ran >> ${file}`;
const runsOf = (file: string) => (existsSync(join(work, file)) ? readFileSync(join(work, file), "utf8").split("\n").filter(Boolean).length : 0);

/** The MCP Tasks extension's identifier (SEP-2663), as a client declares it in its capabilities. */
const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

async function modernClient(s: SidecarProcess, inputRequired: { autoFulfill?: boolean; maxRounds?: number }, extensions?: Record<string, Record<string, never>>): Promise<ClientV2> {
  const client = new ClientV2({ name: "leviath-test", version: "1.0.0" }, { versionNegotiation: { mode: "auto" }, inputRequired, ...(extensions === undefined ? {} : { capabilities: { extensions } }) });
  await client.connect(new TransportV2(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${s.runtimeToken}` } } }));
  expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
  return client;
}

/** One `tools/call` on the 2026 client in manual mode: the `input_required` payload comes back as the answer. */
async function callManual(client: ClientV2, args: Record<string, unknown>, requestState?: string): Promise<Answer> {
  const params = { name: "shell", arguments: args, ...(requestState === undefined ? {} : { requestState }) };
  return (await client.callTool(params, { allowInputRequired: true } as never)) as unknown as Answer;
}

describe("on 2026-07-28: input_required, and the retry is the same call", () => {
  it("a retry before the answer is input_required again; after an allow it runs once; later retries give the same result", async () => {
    const client = await modernClient(sc, { autoFulfill: false });
    const args = { command: appendTo("allowed.txt") };
    const first = await callManual(client, args);
    expect(first.resultType).toBe("input_required");
    expect(typeof first.requestState).toBe("string");
    const pending = first._meta?.["leviath.dev/pending"] as { approval: string; call: string; tool: string; kind: string };
    expect(pending).toMatchObject({ tool: "shell", kind: "tool_approval" });
    const p = await promptFor(sc, "allowed.txt");
    expect(p.id).toBe(pending.approval);
    expect(p.callId).toBe(pending.call);

    const early = await callManual(client, args, first.requestState);
    expect(early.resultType).toBe("input_required");
    expect(runsOf("allowed.txt")).toBe(0);

    await answer(sc, p.id, "allowOnce");
    const done = await callManual(client, args, early.requestState);
    expect(done.resultType ?? "complete").toBe("complete");
    expect(done.isError).toBe(false);
    expect(runsOf("allowed.txt")).toBe(1);
    const again = await callManual(client, args, first.requestState);
    expect(again).toEqual(done);
    expect(runsOf("allowed.txt")).toBe(1);
    await client.close();
  });

  it("after a deny the retry is the refusal, and nothing ran", async () => {
    const client = await modernClient(sc, { autoFulfill: false });
    const args = { command: appendTo("denied.txt") };
    const first = await callManual(client, args);
    expect(first.resultType).toBe("input_required");
    await answer(sc, (await promptFor(sc, "denied.txt")).id, "deny");
    const refused = await callManual(client, args, first.requestState);
    expect(refused.isError).toBe(true);
    expect(refused._meta?.["leviath.dev/refusal"]).toMatchObject({ code: "approval-declined" });
    expect(runsOf("denied.txt")).toBe(0);
    await client.close();
  });

  it("the client's own retry loop (its default mode) gets the result once the prompt is answered", async () => {
    const client = await modernClient(sc, { maxRounds: 10_000 });
    const call = client.callTool({ name: "shell", arguments: { command: appendTo("driver.txt") } });
    await answer(sc, (await promptFor(sc, "driver.txt")).id, "allowOnce");
    const r = await call;
    expect(r.isError).toBe(false);
    expect(runsOf("driver.txt")).toBe(1);
    await client.close();
  });

  it("a client that stops retrying has its call withdrawn after the grace: a later allow is refused and runs nothing", async () => {
    const client = await modernClient(sc, { autoFulfill: false });
    const first = await callManual(client, { command: appendTo("abandoned.txt") });
    expect(first.resultType).toBe("input_required");
    const p = await promptFor(sc, "abandoned.txt");
    // No retry comes: within the grace (10 s past the leg's hold of 0) the prompt is closed.
    await until("the prompt to be withdrawn", async () => ((await get<{ approvals: Pending[] }>(`${sc.url}/v1/approvals`)).body.approvals.some((q) => q.id === p.id) ? undefined : true), 20_000);
    const late = await post(`${sc.url}/v1/approvals/${p.id}`, { decision: "allowOnce" }, { authorization: `Bearer ${sc.token}` });
    expect(late.status).toBe(410);
    expect(runsOf("abandoned.txt")).toBe(0);
    const retried = await callManual(client, { command: appendTo("abandoned.txt") }, first.requestState);
    expect(retried._meta?.["leviath.dev/refusal"]).toMatchObject({ code: "client-gave-up" });
    await client.close();
  }, 30_000);

  it("a requestState the sidecar did not seal is refused before anything is decided", async () => {
    const client = await modernClient(sc, { autoFulfill: false });
    await expect(callManual(client, { command: appendTo("forged.txt") }, "v1.eyJwIjp7ImNhbGwiOiJ4In19.AAAA")).rejects.toThrow(/Invalid or expired requestState/);
    expect(runsOf("forged.txt")).toBe(0);
    await client.close();
  });

  it("a retry that changes the arguments under a call's state is refused, and the call still runs only as asked", async () => {
    const client = await modernClient(sc, { autoFulfill: false });
    const first = await callManual(client, { command: appendTo("swap.txt") });
    const swapped = await callManual(client, { command: appendTo("swapped.txt") }, first.requestState);
    expect(swapped.isError).toBe(true);
    expect(swapped._meta?.["leviath.dev/refusal"]).toMatchObject({ code: "duplicate-call-id" });
    await answer(sc, (await promptFor(sc, "swap.txt")).id, "allowOnce");
    expect((await callManual(client, { command: appendTo("swap.txt") }, first.requestState)).isError).toBe(false);
    expect([runsOf("swap.txt"), runsOf("swapped.txt")]).toEqual([1, 0]);
    await client.close();
  });
});

describe("the Tasks extension (SEP-2663) is not offered: a client that declares it gets input_required", () => {
  // The v2 SDK (2.4.0) has no Tasks runtime on either side, and its client rejects a `resultType: "task"` answer
  // (docs/mcp.md, "Prompts that wait longer than a client"). A client declaring the extension must therefore still
  // get `input_required`, never a task, and `tasks/get` names no method here, so no task can be read or cancelled.
  it("a tools/call from a client declaring the extension is input_required, runs once after the allow, and tasks/get is not a method", async () => {
    const client = await modernClient(sc, { autoFulfill: false }, { [TASKS_EXTENSION]: {} });
    const args = { command: appendTo("tasks.txt") };
    const first = await callManual(client, args);
    expect(first.resultType).toBe("input_required");
    await expect(client.request({ method: "tasks/get", params: { taskId: "any" } }, z.object({}).loose())).rejects.toThrow(/Method not found/);
    await answer(sc, (await promptFor(sc, "tasks.txt")).id, "allowOnce");
    const done = await callManual(client, args, first.requestState);
    expect([done.resultType ?? "complete", done.isError, runsOf("tasks.txt")]).toEqual(["complete", false, 1]);
    await client.close();
  });
});

async function legacyClient(s: SidecarProcess): Promise<ClientV1> {
  const client = new ClientV1({ name: "leviath-test", version: "1.0.0" });
  await client.connect(new TransportV1(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${s.runtimeToken}` } } }));
  return client;
}

describe("on 2025-era revisions with promptHoldSeconds: a pending result and wait_for_approval", () => {
  it("lists wait_for_approval; a pending result names the prompt; the allowed call runs once however often it is collected", async () => {
    const client = await legacyClient(sc);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("wait_for_approval");
    const first = (await client.callTool({ name: "shell", arguments: { command: appendTo("legacy.txt") } })) as Answer;
    expect(first.isError).toBe(false);
    const pending = first._meta?.["leviath.dev/pending"] as { approval: string; call: string };
    const p = await promptFor(sc, "legacy.txt");
    expect(pending).toMatchObject({ approval: p.id, call: p.callId, tool: "shell", kind: "tool_approval" });
    expect(text(first)).toBe(`[pending] The call to 'shell' has not run: it waits for approval '${p.id}'. It is refused if nobody answers by ${(p as unknown as { expiresAt: string }).expiresAt}. Call wait_for_approval with approval '${p.id}' to wait for the answer and get the call's result.`);

    const early = (await client.callTool({ name: "wait_for_approval", arguments: { approval: p.id } })) as Answer;
    expect(early._meta?.["leviath.dev/pending"]).toEqual(pending);
    expect(runsOf("legacy.txt")).toBe(0);

    await answer(sc, p.id, "allowOnce");
    const done = (await client.callTool({ name: "wait_for_approval", arguments: { approval: p.id } })) as Answer;
    expect(done.isError).toBe(false);
    expect(done._meta?.["leviath.dev/label"]).toMatchObject({ label: "public" });
    const again = (await client.callTool({ name: "wait_for_approval", arguments: { approval: p.id } })) as Answer;
    expect(again).toEqual(done);
    expect(runsOf("legacy.txt")).toBe(1);
    await client.close();
  });

  it("a denied call's wait is its refusal; an approval never named is unknown", async () => {
    const client = await legacyClient(sc);
    await client.callTool({ name: "shell", arguments: { command: appendTo("legacy-denied.txt") } });
    const p = await promptFor(sc, "legacy-denied.txt");
    await answer(sc, p.id, "deny");
    const refused = (await client.callTool({ name: "wait_for_approval", arguments: { approval: p.id } })) as Answer;
    expect(refused.isError).toBe(true);
    expect(refused._meta?.["leviath.dev/refusal"]).toMatchObject({ code: "approval-declined" });
    expect(runsOf("legacy-denied.txt")).toBe(0);
    const unknown = (await client.callTool({ name: "wait_for_approval", arguments: { approval: "nope" } })) as Answer;
    expect(unknown).toMatchObject({ isError: true, content: [{ type: "text", text: "[error] no call answered pending waits for approval 'nope'" }] });
    await client.close();
  });
});

describe("on 2025-era revisions: a pending call is run only while its client can collect it", () => {
  it("the end of the session it was answered pending in withdraws it: a later allow is refused and runs nothing", async () => {
    // On main the call stayed pending with its session gone, and this allow ran it for nobody.
    const client = await legacyClient(sc);
    const first = (await client.callTool({ name: "shell", arguments: { command: appendTo("ended.txt") } })) as Answer;
    expect(first._meta?.["leviath.dev/pending"]).toBeDefined();
    const p = await promptFor(sc, "ended.txt");
    await (client.transport as TransportV1).terminateSession();
    const late = await post(`${sc.url}/v1/approvals/${p.id}`, { decision: "allowOnce" }, { authorization: `Bearer ${sc.token}` });
    expect([late.status, late.body["code"]]).toEqual([410, "approval-withdrawn"]);
    expect(runsOf("ended.txt")).toBe(0);
    await client.close();
  });

  it("a call outside a session is held until it is answered, never answered pending (nothing could tell the client left)", async () => {
    // On main it was answered pending at once, and nothing bound the call to a client still there to collect it.
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${sc.runtimeToken}`, "mcp-protocol-version": "2025-06-18" };
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "shell", arguments: { command: appendTo("stateless.txt") } } });
    const answered = fetch(`${sc.url}/mcp`, { method: "POST", headers, body }).then((r) => r.text());
    await answer(sc, (await promptFor(sc, "stateless.txt")).id, "allowOnce");
    const result = (JSON.parse(/^data: (.*)$/m.exec(await answered)?.[1] ?? "{}") as { result?: Answer }).result;
    expect(result?._meta?.["leviath.dev/pending"]).toBeUndefined();
    expect([result?.isError, runsOf("stateless.txt")]).toEqual([false, 1]);
  });
});

describe("where the interaction timeout ends the wait", () => {
  it("a pending call collected with wait_for_approval is refused approval-timed-out, as a held one is", async () => {
    const { sc: timing } = await start("timeout", "prompt_hold_secs = 1\ninteraction_timeout_secs = 2");
    try {
      const client = await legacyClient(timing);
      const first = (await client.callTool({ name: "shell", arguments: { command: "echo never" } })) as Answer;
      const approval = (first._meta?.["leviath.dev/pending"] as { approval: string }).approval;
      let last = first;
      // Each wait holds at most a second: the prompt expires within three of them.
      for (let i = 0; i < 10 && last._meta?.["leviath.dev/pending"] !== undefined; i++) {
        last = (await client.callTool({ name: "wait_for_approval", arguments: { approval } })) as Answer;
      }
      expect(last.isError).toBe(true);
      expect(last._meta?.["leviath.dev/refusal"]).toMatchObject({ code: "approval-timed-out" });
      await client.close();
    } finally {
      expect(await timing.stop()).toBe(0);
    }
  }, 30_000);

  it("without promptHoldSeconds a 2025-era client is held as before, and offered no wait_for_approval", async () => {
    const { sc: plain } = await start("plain", "interaction_timeout_secs = 1");
    try {
      const client = await legacyClient(plain);
      expect((await client.listTools()).tools.map((t) => t.name)).not.toContain("wait_for_approval");
      const r = (await client.callTool({ name: "shell", arguments: { command: "echo never" } })) as Answer;
      expect(r._meta?.["leviath.dev/refusal"]).toMatchObject({ code: "approval-timed-out" });
      await client.close();
    } finally {
      expect(await plain.stop()).toBe(0);
    }
  }, 30_000);
});
