import { describe, expect, it } from "vitest";
import type { KubeClient } from "../../kube/client.ts";
import { computeChunkDigest } from "../../sidecar/storage/audit-digests.ts";
import { buildAuditRow, buildCallRow, groupAuditByCall, parseAuditLines, runAudit, type AuditLine } from "./audit.ts";
import { buildPendingRows } from "./pending.ts";
import { buildHeldPromptText } from "../../policy/held-call.ts";

describe("audit and pending rows", () => {
  it("reads the stored audit lines and skips anything else", () => {
    const record = { timestamp: 1767225600, agent_id: "r", call_id: "s1", tool_name: "shell", stage: "main", decision: "allow", decision_source: "user_allow_once", approval_reason: "fine" };
    const text = [JSON.stringify({ leviath_audit: { run: "r", file: "stages/0/decisions.jsonl", record } }), "not json", JSON.stringify({ other: 1 }), ""].join("\n");
    const lines = parseAuditLines(text);
    expect(lines).toEqual([{ run: "r", file: "stages/0/decisions.jsonl", record }]);
    expect(buildAuditRow(lines[0]!)).toEqual(["2026-01-01T00:00:00Z", "stages/0/decisions.jsonl", "shell", "allow", "user_allow_once", "call_id=s1 approval_reason=fine"]);
  });

  it("tells each call as one story: the permission's ask, the person's answer, the gate's decision, in order", () => {
    const at = (file: string, record: Record<string, unknown>): AuditLine => ({ run: "r", file, record: { timestamp: 1767225600, tool_name: "shell", ...record } });
    const lines = [
      at("stages/0/decisions.jsonl", { call_id: "s1", decision: "ask", decision_source: "tool_permission" }),
      at("stages/0/decisions.jsonl", { call_id: "r1", tool_name: "read_file", decision: "allow", decision_source: "read_path" }),
      at("stages/0/decisions.jsonl", { call_id: "s1", decision: "allow", decision_source: "user_allow_once", approved_by: "ana" }),
      at("stages/0/taint_audit.jsonl", { call_id: "s1", decision: "allow", decision_source: "taint_public" }),
      at("stages/0/decisions.jsonl", { decision: "allow", tool_name: "seed" }),
    ];
    const stories = groupAuditByCall(lines);
    expect(stories.map((st) => [st.id, st.lines.length])).toEqual([["s1", 3], ["r1", 1], [undefined, 1]]);
    expect(buildCallRow(stories[0]!)).toEqual(["2026-01-01T00:00:00Z", "s1", "shell", "allow", "permission ask (tool_permission) → permission allow (user_allow_once) by ana → gate allow (taint_public)"]);
    expect(buildCallRow(stories[2]!)).toEqual(["2026-01-01T00:00:00Z", "", "seed", "allow", "permission allow"]);
  });

  it("shows a gate's whole question in the pending table", () => {
    const prompt = "Tool 'http_post' would send Private-level data over a channel cleared only for Public. Allow it?";
    const run = { metadata: { name: "a", namespace: "ns", uid: "u" }, status: { pendingApprovals: [{ id: "g", kind: "taint_gate" as const, tool: "http_post", prompt, raisedAt: "2026-01-01T00:00:00Z" }] } };
    expect(buildPendingRows([run], Date.parse("2026-01-01T00:00:30Z"))[0]!.at(-1)).toBe(prompt);
  });

  it("keeps every reason of a prompt held for several, and its question, however long the command", () => {
    const prompt = buildHeldPromptText([
      { check: "permission", text: `Allow shell command: curl ${"x".repeat(400)}` },
      { check: "gate", text: "Tool 'shell' would send Private-level data over a channel cleared only for Public. Allow it?" },
      { check: "integrity", text: "Tool 'shell' was held: the context holds text a third party could have written (entry 'web/p' from 'web_fetch'), and 'shell' acts. Allow it?" },
    ]);
    const run = { metadata: { name: "a", namespace: "ns", uid: "u" }, status: { pendingApprovals: [{ id: "tool-1", kind: "tool_approval" as const, tool: "shell", prompt, raisedAt: "2026-01-01T00:00:00Z" }] } };
    const cell = buildPendingRows([run], Date.parse("2026-01-01T00:00:30Z"))[0]!.at(-1)!;
    expect(cell).toMatch(/^This call is held for 3 reasons: \(1\) Allow shell command: curl x+…x+\. \(2\) Tool 'shell' would send Private-level data over a channel cleared only for Public\. \(3\) Tool 'shell' was held: .*from 'web_fetch'.* Allow it\?/);
    expect(cell.length).toBeLessThan(prompt.length);
  });

  it("lists each pending prompt of each Run", () => {
    const run = (name: string, ids: string[]) => ({
      metadata: { name, namespace: "ns", uid: "u" },
      status: { pendingApprovals: ids.map((id) => ({ id, kind: "taint_gate" as const, tool: "shell", stage: "main", prompt: "allow\nshell?", raisedAt: "2026-01-01T00:00:00Z" })) },
    });
    expect(buildPendingRows([run("a", ["gate-1", "gate-2"]), run("b", [])], Date.parse("2026-01-01T00:00:30Z")))
      .toEqual([["ns", "a", "gate-1", "taint_gate", "shell", "main", "30s", "allow shell?"], ["ns", "a", "gate-2", "taint_gate", "shell", "main", "30s", "allow shell?"]]);
  });
});

describe("audit --follow", () => {
  const line = (id: string) => JSON.stringify({ leviath_audit: { run: "r", file: "stages/0/decisions.jsonl", record: { call_id: id, tool_name: "shell", decision: "allow" } } });
  // What the API server holds at each read: the Run's phase and its audit ConfigMaps, as the sidecar appends to them.
  const reads = [
    { phase: "Running", chunks: [[line("a")]] },
    { phase: "Running", chunks: [[line("a"), line("b")]] },
    { phase: "Running", chunks: [[line("a"), line("b")]] },
    { phase: "Succeeded", chunks: [[line("a"), line("b")], [line("c")]] },
  ];

  function fakeContext() {
    let at = 0;
    let out = "";
    const client = {
      request: (_method: string, path: string) => {
        const now = reads[Math.min(at, reads.length - 1)]!;
        const texts = now.chunks.map((c, i) => [`r-audit-00${i}`, c.join("\n")] as const);
        const audit = { chunks: texts.map(([name, text]) => computeChunkDigest(name, text)) };
        if (path.includes("/runs/")) return Promise.resolve({ metadata: { name: "r", namespace: "ns", uid: "u" }, status: { phase: now.phase, audit } });
        const items = texts.map(([name, text]) => ({ metadata: { name, ownerReferences: [{ uid: "u" }] }, data: { "audit.jsonl": text } }));
        return Promise.resolve({ items });
      },
    } as unknown as KubeClient;
    const sleeps: number[] = [];
    const ctx = {
      io: { stdout: (t: string) => void (out += t), stderr: () => undefined, env: {}, cwd: "/", homedir: undefined },
      client, namespace: "ns", nowMs: () => 0,
      sleep: (ms: number) => (sleeps.push(ms), at++, Promise.resolve()),
    };
    return { ctx, out: () => out, sleeps };
  }

  it("prints each record once as it is appended, and ends when the Run is in a terminal phase", async () => {
    const f = fakeContext();
    expect(await runAudit(f.ctx, { run: "r", output: "json", follow: true })).toBe(0);
    expect(f.out().trim().split("\n").map((l) => (JSON.parse(l) as { leviath_audit: { record: { call_id: string } } }).leviath_audit.record.call_id)).toEqual(["a", "b", "c"]);
    expect(f.sleeps).toEqual([1000, 1000, 1000]);
  });

  it("prints the table's header once, and reads once without --follow", async () => {
    const f = fakeContext();
    await runAudit(f.ctx, { run: "r", output: "table", follow: true });
    expect(f.out().match(/^TIME /gm)).toHaveLength(1);
    expect(f.out().match(/call_id=/g)).toHaveLength(3);
    const once = fakeContext();
    await runAudit(once.ctx, { run: "r", output: "table" });
    expect(once.sleeps).toEqual([]);
    expect(once.out().match(/call_id=/g)).toHaveLength(1);
  });

  it("shows only what the sidecar's status.audit vouches for, and says what it did not show", async () => {
    const own = line("own");
    const forged = JSON.stringify({ leviath_audit: { run: "r", file: "stages/0/decisions.jsonl", record: { call_id: "x", tool_name: "shell", decision: "allow", approved_by: "security-officer" } } });
    const chunks = [["r-audit-000", `${own}\n${forged}\n`], ["r-audit-031", `${forged}\n`]] as const;
    const client = {
      request: (_method: string, path: string) => path.includes("/runs/")
        ? Promise.resolve({ metadata: { name: "r", namespace: "ns", uid: "u" }, status: { phase: "Succeeded", audit: { chunks: [computeChunkDigest("r-audit-000", `${own}\n`)] } } })
        : Promise.resolve({ items: chunks.map(([name, text]) => ({ metadata: { name, ownerReferences: [{ uid: "u" }] }, data: { "audit.jsonl": text } })) }),
    } as unknown as KubeClient;
    let out = "";
    let err = "";
    const ctx = { io: { stdout: (t: string) => void (out += t), stderr: (t: string) => void (err += t), env: {}, cwd: "/", homedir: undefined }, client, namespace: "ns", nowMs: () => 0, sleep: () => Promise.resolve() };
    expect(await runAudit(ctx, { run: "r", output: "json" })).toBe(0);
    expect(out).toBe(`${own}\n`);
    expect(err).toContain("'r-audit-031' was not written by the Run's sidecar (not in status.audit)");
    expect(err).toContain("at the end of 'r-audit-000' are not covered by status.audit");
  });
});
