import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerAndWait, callTool, get, makeTempDir, metricValue, parseJsonLines, post, scrapeMetrics, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// Sequences of calls that raise and lower the context taint, against the real server: a private read (an
// active grant makes every read private), an eviction, a model-written copy, a session raise, approvals
// answered and expired, a yolo waiver and headless blocks; checked by decision, HTTP code, message, audit
// line and metric value.
let root: string;

function makeTree(name: string, config: string): { args: string[]; audit: string; run: string } {
  const dir = join(root, name);
  mkdirSync(join(dir, "home", "vault"), { recursive: true });
  mkdirSync(join(dir, "work"), { recursive: true });
  writeFileSync(join(dir, "home", "vault", "secret.txt"), "vault secret\n");
  writeFileSync(join(dir, "work", "notes.md"), "notes\n");
  writeFileSync(join(dir, "agent.leviath"), `[agent]\nname = '${name}'\n[read_paths]\nallow = ['~/vault']\n[security]\ntaint_tracking = true\n`);
  writeFileSync(join(dir, "config.toml"), `[tool_permissions]\nshell = 'allow'\nhttp_post = 'allow'\nweb_fetch = 'deny'\n[agent_read_paths.${name}]\nallow = ['~/vault']\n${config}`);
  writeFileSync(join(dir, "policy.toml"), "[[allowlist]]\ntool = 'http_post'\nto = ['localhost']\nmax_sensitivity = 'private'\n");
  const args = ["--agent", join(dir, "agent.leviath"), "--config", join(dir, "config.toml"), "--policy", join(dir, "policy.toml"), "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit")];
  return { args, audit: join(dir, "audit"), run: name };
}

/** A local server that keeps the bodies posted to it. */
async function startHookServer(): Promise<{ port: number; bodies: string[]; close: () => Promise<void> }> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      bodies.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { port: (server.address() as AddressInfo).port, bodies, close: () => new Promise((r) => server.close(() => r())) };
}

const env = (name: string) => ({ LEVIATH_HOME: join(root, name, "home") });
const gateEvents = (audit: string, run: string) => parseJsonLines(readFileSync(join(audit, run, "stages", "0", "taint_audit.jsonl"), "utf8"));
const BLOCK_PROMPT = "Tool 'shell' would send Private-level data over a channel cleared only for Public. Allow it?";
const DENIED = "[blocked] Tool 'shell' would send data at private sensitivity, above its public clearance. Denied by user.";

beforeAll(() => {
  root = makeTempDir("leviath-sidecar-taint-");
});

describe("interactive: a private read, a prompt, an eviction, a model copy, a session raise", () => {
  let sc: SidecarProcess;
  let tree: ReturnType<typeof makeTree>;
  beforeAll(async () => {
    tree = makeTree("inter", "[security]\nallow_local_network = true\n");
    sc = await startSidecar([...tree.args, "--metrics-listen", "127.0.0.1:0"], { env: env("inter") });
  }, 60_000); // a sidecar start takes 10 s and more on a loaded machine
  afterAll(async () => {
    expect(await sc.stop()).toBe(0);
  });

  it("starts public, and shell runs while it is", async () => {
    expect((await get(`${sc.url}/v1/context/taint`)).body).toEqual({ tracking: true, level: "public", regions: [] });
    const r = await callTool(sc, "shell", { command: "echo ok" }, "s1");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ decision: "allow", result: "ok\n", label: "public", taint: "public" });
  });

  it("a read raises the taint to private; shell then asks, and a deny refuses it with upstream's text", async () => {
    expect((await callTool(sc, "read_file", { path: "notes.md" }, "r1")).body).toMatchObject({ label: "private", taint: "private" });
    const ask = await callTool(sc, "shell", { command: "echo leak" }, "s2");
    expect(ask.status).toBe(202);
    expect(ask.body.approval).toMatchObject({ id: "gate-s2", kind: "taint_gate", prompt: BLOCK_PROMPT, options: ["Allow once", "Allow for this session", "Deny"] });
    const metrics = await scrapeMetrics(sc);
    expect(metricValue(metrics, "leviath_sidecar_pending_approvals", { prompt: "taint_gate" })).toBe(1);
    expect(metricValue(metrics, "leviath_sidecar_context_taint_level")).toBe(2);
    const unauth = await post(`${sc.url}/v1/approvals/gate-s2`, { decision: "allowOnce" });
    expect(unauth.status).toBe(401);
    const done = await answerAndWait(sc, "gate-s2", "s2", "deny");
    expect(done.status).toBe(403);
    expect(done.body).toMatchObject({ decision: "deny", code: "gate-denied", message: DENIED });
    expect(gateEvents(tree.audit, tree.run).slice(-2).map((e) => [e["tool_name"], e["taint_level"], e["clearance"], e["allowed"], e["decision_source"]])).toEqual([
      ["shell", "Private", "Public", false, "AutoBlock"],
      ["shell", "Private", "Public", false, "UserDenied"],
    ]);
  });

  it("evicting the private entry lowers the taint and shell runs again", async () => {
    const ev = await post(`${sc.url}/v1/context/evictions`, { entries: [{ region: "conversation", id: "r1" }] });
    expect(ev.body).toEqual({ evicted: 1, taint: "public" });
    expect((await callTool(sc, "shell", { command: "echo again" }, "s3")).body).toMatchObject({ decision: "allow", result: "again\n" });
  });

  it("a model-written copy keeps the taint after the original is evicted (no laundering)", async () => {
    await callTool(sc, "read_file", { path: join(root, "inter/home/vault/secret.txt") }, "r2");
    const w = await post(`${sc.url}/v1/context/entries`, { entries: [{ region: "notes", id: "copy-1", source: "model" }, { region: "conversation", id: "task", source: "input" }] });
    expect(w.body).toEqual({ labelled: [{ region: "notes", id: "copy-1", level: "private" }, { region: "conversation", id: "task", level: "public" }], taint: "private" });
    await post(`${sc.url}/v1/context/evictions`, { entries: [{ region: "conversation", id: "r2" }] });
    const t = await get<{ level: string; regions: { region: string; level: string }[] }>(`${sc.url}/v1/context/taint`);
    expect(t.body.level).toBe("private");
    expect(t.body.regions).toEqual(expect.arrayContaining([{ region: "notes", level: "private" }, { region: "conversation", level: "public" }]));
    expect((await get(`${sc.url}/v1/context/entries`)).body).toEqual({ entries: expect.arrayContaining([{ region: "notes", id: "copy-1", level: "private" }]) });
    expect((await callTool(sc, "shell", { command: "echo x" }, "s4")).status).toBe(202);
    expect((await answerAndWait(sc, "gate-s4", "s4", "deny")).status).toBe(403);
  });

  it("'Allow for this session' runs the call and every later shell call without asking", async () => {
    const ask = await callTool(sc, "shell", { command: "echo raised" }, "s5");
    expect(ask.body.approval?.id).toBe("gate-s5");
    const done = await answerAndWait(sc, "gate-s5", "s5", "allowForRun");
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ decision: "allow", result: "raised\n" });
    expect((await callTool(sc, "shell", { command: "echo free" }, "s6")).body).toMatchObject({ decision: "allow", result: "free\n" });
    const last = gateEvents(tree.audit, tree.run).slice(-3);
    expect(last.map((e) => [e["decision_source"], e["clearance"], e["allowed"]])).toEqual([["AutoBlock", "Public", false], ["UserAlwaysAllow", "Public", true], ["AutoAllow", "Private", true]]);
  });

  it("extracts targets: a target-scoped allowlist rule allows a live call, another host asks", async () => {
    // The sidecar sends it (a local server here: the tree's policy allows local addresses).
    const hook = await startHookServer();
    try {
      const ok = await callTool(sc, "http_post", { url: `http://localhost:${hook.port}/hook`, body: "x" }, "h1");
      expect(ok.body).toMatchObject({ id: "h1", tool: "http_post", decision: "allow", label: "public", taint: "private" });
      expect(gateEvents(tree.audit, tree.run).at(-1)).toMatchObject({ tool_name: "http_post", allowed: true, decision_source: { AllowlistRule: { rule_index: 0 } } });
      const ask = await callTool(sc, "http_post", { url: `http://127.0.0.1:${hook.port}/x`, body: "y" }, "h2");
      expect(ask.status).toBe(202);
      expect(hook.bodies).toEqual(["x"]);
      const once = await answerAndWait(sc, "gate-h2", "h2", "allowOnce");
      expect(once.body).toMatchObject({ decision: "allow", label: "public", taint: "private" });
      expect(hook.bodies).toEqual(["x", "y"]);
    } finally {
      await hook.close();
    }
  });

  it("a permission deny refuses before the gate, and counts land in the metrics and the status", async () => {
    const r = await callTool(sc, "web_fetch", { url: "https://example.com" }, "w1");
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "permission-denied", message: "[denied] Tool 'web_fetch' is not permitted." });
    const metrics = await scrapeMetrics(sc);
    expect(metricValue(metrics, "leviath_sidecar_decisions_total", { decision: "deny", source: "user_denied", tool_class: "shell", mode: "interactive" })).toBe(2);
    expect(metricValue(metrics, "leviath_sidecar_decisions_total", { decision: "allow", source: "user_always_allow", tool_class: "shell", mode: "interactive" })).toBe(1);
    expect(metricValue(metrics, "leviath_sidecar_decisions_total", { decision: "deny", source: "permission_deny", tool_class: "outbound", mode: "interactive" })).toBe(1);
    expect(metricValue(metrics, "leviath_sidecar_approval_wait_seconds_count", { prompt: "taint_gate", outcome: "denied" })).toBe(2);
    expect(metricValue(metrics, "leviath_sidecar_pending_approvals", { prompt: "taint_gate" })).toBe(0);
    const status = await get<{ taint: unknown; gateDecisions: Record<string, number>; pendingApprovals: unknown[] }>(`${sc.url}/v1/status`);
    expect(status.body.taint).toEqual({ tracking: true, level: "private" });
    expect(status.body.gateDecisions).toMatchObject({ user_denied: 2, permission_deny: 1, allowlist_rule: 1 });
    expect(status.body.pendingApprovals).toEqual([]);
  });
});

describe("headless, yolo and unattended runs", () => {
  it("headless blocks at once with the block text, and refuses an ask it cannot put to anyone", async () => {
    const tree = makeTree("headless", "");
    const sc = await startSidecar([...tree.args, "--mode", "headless"], { env: env("headless") });
    await callTool(sc, "read_file", { path: "notes.md" });
    const r = await callTool(sc, "shell", { command: "echo leak" });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({
      code: "gate-blocked",
      message: "[blocked] Tool 'shell' would send Private-level data over a channel cleared only for Public (tainted by: conversation). Add an allowlist rule with `lev policy add` to permit it.",
    });
    const w = await callTool(sc, "write_file", { path: "x.txt", content: "x" });
    expect(w.body).toMatchObject({ code: "approval-unavailable", message: "[denied] User declined tool call 'write_file'." });
    expect(await sc.stop()).toBe(0);
  });

  it("yolo waives the block with a record of it, and never lifts a deny", async () => {
    const tree = makeTree("yolo", "");
    const sc = await startSidecar([...tree.args, "--mode", "yolo"], { env: env("yolo") });
    await callTool(sc, "read_file", { path: "notes.md" });
    expect((await callTool(sc, "shell", { command: "echo waived" })).body).toMatchObject({ decision: "allow", result: "waived\n" });
    expect(gateEvents(tree.audit, tree.run).slice(-2).map((e) => [e["decision_source"], e["taint_level"], e["allowed"]])).toEqual([["AutoBlock", "Private", false], ["YoloAutoApprove", "Private", true]]);
    expect((await callTool(sc, "web_fetch", { url: "https://example.com" })).body).toMatchObject({ code: "permission-denied" });
    expect((await callTool(sc, "write_file", { path: "y.txt", content: "y" })).body).toMatchObject({ decision: "allow" });
    expect(await sc.stop()).toBe(0);
  });

  it("an unanswered prompt is denied when interaction_timeout_secs expires", async () => {
    const tree = makeTree("unattended", "[limits]\ninteraction_timeout_secs = 1\n");
    const sc = await startSidecar([...tree.args, "--mode", "unattended", "--metrics-listen", "127.0.0.1:0"], { env: env("unattended") });
    await callTool(sc, "read_file", { path: "notes.md" });
    const ask = await callTool(sc, "shell", { command: "echo late" }, "u1");
    expect(ask.status).toBe(202);
    const done = await get(`${sc.url}/v1/tool-calls/u1?wait=10`);
    expect(done.status).toBe(403);
    // Upstream's record (UserDenied) and text for an expired prompt; the code and the decision source say it expired.
    expect(done.body).toMatchObject({ code: "gate-timed-out", message: "[blocked] Tool 'shell' would send data at private sensitivity, above its public clearance. Denied by user." });
    expect(gateEvents(tree.audit, tree.run).at(-1)).toMatchObject({ decision_source: "UserDenied", allowed: false });
    const metrics = await scrapeMetrics(sc);
    expect(metricValue(metrics, "leviath_sidecar_decisions_total", { decision: "deny", source: "gate_timed_out", tool_class: "shell", mode: "unattended" })).toBe(1);
    expect(metricValue(metrics, "leviath_sidecar_approval_wait_seconds_count", { prompt: "taint_gate", outcome: "expired" })).toBe(1);
    expect(await sc.stop()).toBe(0);
  });
});

describe("a restart keeps the taint, the session raise and the audit", () => {
  it("restores the labels and raises from the journal and appends to the same audit file", async () => {
    const tree = makeTree("durable", "");
    let sc = await startSidecar(tree.args, { env: env("durable") });
    await callTool(sc, "read_file", { path: "notes.md" });
    expect((await callTool(sc, "shell", { command: "echo a" }, "d1")).status).toBe(202);
    expect((await answerAndWait(sc, "gate-d1", "d1", "deny")).status).toBe(403);
    const before = gateEvents(tree.audit, tree.run);
    expect(await sc.stop()).toBe(0);

    sc = await startSidecar(tree.args, { env: env("durable") });
    expect((await get(`${sc.url}/v1/context/taint`)).body).toMatchObject({ level: "private" });
    const again = await callTool(sc, "shell", { command: "echo b" }, "d2");
    expect(again.status).toBe(202);
    expect((await answerAndWait(sc, "gate-d2", "d2", "allowForRun")).body).toMatchObject({ result: "b\n" });
    const after = gateEvents(tree.audit, tree.run);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.length).toBe(before.length + 2);
    expect(await sc.stop("SIGKILL")).toBe("SIGKILL");

    sc = await startSidecar(tree.args, { env: env("durable") });
    expect((await callTool(sc, "shell", { command: "echo c" })).body).toMatchObject({ decision: "allow", result: "c\n" });
    expect(await sc.stop()).toBe(0);
  }, 180_000); // three sidecar starts in a row, each 10 s and more on a loaded machine
});
