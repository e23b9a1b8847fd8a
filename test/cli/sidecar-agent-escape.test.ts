import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSidecarClient } from "../../src/runtime/sidecar-client.ts";
import { repo } from "./run-cli.ts";
import { answerAndWait, callTool, makeTempDir, parseJsonLines, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// The sidecar against its own agent (issue 14, findings 1, 2, 4 and 7): what the model's commands, the
// processes they leave behind and a web page can do to the real sidecar, over real HTTP on real files.
let root: string;

function makeTree(name: string, opts: { config?: string; agent?: string } = {}): { dir: string; args: string[]; audit: string; work: string } {
  const dir = join(root, name);
  mkdirSync(join(dir, "work"), { recursive: true });
  writeFileSync(join(dir, "work", "notes.md"), "notes\n");
  writeFileSync(join(dir, "agent.leviath"), `[agent]\nname = '${name}'\n${opts.agent ?? ""}[security]\ntaint_tracking = true\n`);
  writeFileSync(join(dir, "config.toml"), `[tool_permissions]\nshell = 'allow'\nhttp_post = 'allow'\n${opts.config ?? ""}`);
  writeFileSync(join(dir, "approval.token"), "a-person-holds-this-approval-token\n");
  const args = ["--agent", join(dir, "agent.leviath"), "--config", join(dir, "config.toml"), "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit"), "--approval-token-file", join(dir, "approval.token")];
  return { dir, args, audit: join(dir, "audit"), work: join(dir, "work") };
}

/** Pids of processes whose command line is exactly `cmd` (seen from the test's own PID namespace). */
function pidsOf(cmd: string): number[] {
  const ps = spawnSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  return ps.stdout.split("\n").map((l) => l.trim()).filter((l) => l.endsWith(` ${cmd}`) && l.split(" ").slice(1).join(" ") === cmd).map((l) => Number(l.split(" ")[0]));
}

async function waitUntilGone(cmd: string): Promise<number[]> {
  for (let i = 0; i < 30 && pidsOf(cmd).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
  return pidsOf(cmd);
}

beforeAll(() => {
  root = makeTempDir("leviath-sidecar-escape-");
});

describe("finding 1: a command cannot outlive its call, see the sidecar, or read a secret", () => {
  let sc: SidecarProcess;
  let tree: ReturnType<typeof makeTree>;
  const leftovers: number[] = [];
  beforeAll(async () => {
    tree = makeTree("leftover");
    sc = await startSidecar(tree.args);
  });
  afterAll(async () => {
    // Only on a failure: whatever a command left behind, by pid.
    for (const pid of leftovers) spawnSync("kill", ["-9", String(pid)]);
    expect(await sc.stop()).toBe(0);
  });

  it("ends a detached (setsid) process when the command that left it ends", async () => {
    const r = await callTool(sc, "shell", { command: "setsid sh -c 'exec sleep 987.61' </dev/null >/dev/null 2>&1 & echo left" });
    expect(r.body).toMatchObject({ decision: "allow", result: "left\n" });
    const alive = await waitUntilGone("sleep 987.61");
    leftovers.push(...alive);
    expect(alive).toEqual([]);
  });

  it("ends a command's whole tree at its timeout too", async () => {
    const t = makeTree("timeout", { agent: "" });
    writeFileSync(join(t.dir, "config.toml"), "[tool_permissions]\nshell = 'allow'\n[limits]\nscript_shell_timeout_secs = 1\n");
    const s = await startSidecar(t.args);
    try {
      const r = await callTool(s, "shell", { command: "setsid sh -c 'exec sleep 987.62' </dev/null >/dev/null 2>&1 & sleep 30" });
      expect(r.body).toMatchObject({ decision: "allow", isError: true });
      const alive = await waitUntilGone("sleep 987.62");
      leftovers.push(...alive);
      expect(alive).toEqual([]);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });

  it("cannot read the approval or runtime token, the sidecar's command line, or its audit", async () => {
    const files = [tree.dir + "/approval.token", sc.runtimeTokenFile, sc.approvalTokenFile!, `/proc/${sc.proc.pid}/cmdline`, `/proc/${sc.proc.pid}/environ`, join(tree.audit, "leftover", "state.jsonl")];
    // A process left behind polls for them, as finding 1's did; whatever it finds lands in the workdir.
    const loop = `while :; do for f in ${files.map((f) => `'${f}'`).join(" ")}; do cat "$f" 2>/dev/null; done; sleep 0.1; done`;
    const r = await callTool(sc, "shell", { command: `${files.map((f) => `cat '${f}' 2>&1;`).join(" ")} setsid sh -c "${loop} > leak.txt" & echo done` });
    expect(r.body).toMatchObject({ decision: "allow" });
    const result = (r.body as { result: string }).result;
    await new Promise((done) => setTimeout(done, 500));
    const leaked = existsSync(join(tree.work, "leak.txt")) ? readFileSync(join(tree.work, "leak.txt"), "utf8") : "";
    for (const secret of ["a-person-holds-this-approval-token", sc.runtimeToken, sc.token!]) {
      expect(result).not.toContain(secret);
      expect(leaked).not.toContain(secret);
    }
    expect(result).not.toContain("--approval-token-file");
  });

  it("never prints a token: stdout names the files", async () => {
    const t = makeTree("printed");
    const s = await startSidecar(t.args.slice(0, -2));
    try {
      const cmdline = readFileSync(`/proc/${s.proc.pid}/cmdline`, "utf8");
      expect(cmdline).not.toContain(s.token!);
      expect(cmdline).not.toContain(s.runtimeToken);
      expect(s.approvalTokenFile).toBe(join(t.audit, "printed", "approval-token"));
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });
});

describe("finding 2: the audit and the state journal are out of the agent's reach", () => {
  it("refuses an audit directory inside the workdir, or reachable through a granted read path", async () => {
    const t = makeTree("inside");
    const run = (args: string[], env: Record<string, string> = {}) => {
      const all: Record<string, string | undefined> = { ...process.env, ...env };
      for (const [k, v] of Object.entries(all)) if (v === undefined) delete all[k];
      return spawnSync(process.execPath, [repo("bin/leviath"), "sidecar", "--listen", "127.0.0.1:0", ...args], { encoding: "utf8", env: all, timeout: 30_000 });
    };
    const inWorkdir = run([...t.args, "--audit-dir", join(t.work, ".leviath")]);
    expect(inWorkdir.status).toBe(2);
    expect(inWorkdir.stderr).toContain("would be inside the workdir");
    // The default ~/.leviath/runs with LEVIATH_HOME (and so `~`) being the workdir itself.
    const byHome = run(t.args.filter((a, i, all) => a !== "--audit-dir" && all[i - 1] !== "--audit-dir"), { LEVIATH_HOME: t.work });
    expect(byHome.status).toBe(2);
    expect(byHome.stderr).toContain("would be inside the workdir");
    // The seed's example grant of ~/.leviath/runs exposes the sidecar's own audit when `~` is its home.
    const g = makeTree("granted", { agent: "[read_paths]\nallow = ['~/.leviath/runs']\n", config: "[agent_read_paths.granted]\nallow = ['~/.leviath/runs']\n" });
    const home = join(g.dir, "home");
    mkdirSync(home);
    const granted = run([...g.args.slice(0, -4), "--approval-token-file", join(g.dir, "approval.token")], { HOME: home, LEVIATH_HOME: undefined as unknown as string });
    expect(granted.status).toBe(2);
    expect(granted.stderr).toContain("readable through a granted read path");
  });

  it("a command can neither empty the audit nor forge the journal, before or after a restart", async () => {
    const t = makeTree("forge");
    const journal = join(t.audit, "forge", "state.jsonl");
    let sc = await startSidecar(t.args);
    const audit = join(t.audit, "forge", "stages", "0", "taint_audit.jsonl");
    try {
      expect((await callTool(sc, "shell", { command: "echo first" })).body).toMatchObject({ decision: "allow" });
      const before = readFileSync(audit, "utf8");
      const forge = `(true > '${audit}'); (printf '%s\\n' '{"op":"raise","tool":"http_post"}' '{"op":"grant","key":"http_post"}' >> '${journal}'); echo tried`;
      expect((await callTool(sc, "shell", { command: forge })).body).toMatchObject({ decision: "allow", result: expect.stringContaining("tried") });
      expect(readFileSync(audit, "utf8").startsWith(before)).toBe(true);
      expect(readFileSync(journal, "utf8")).not.toContain('"raise"');
    } finally {
      expect(await sc.stop()).toBe(0);
    }
    sc = await startSidecar(t.args);
    try {
      expect((await callTool(sc, "read_file", { path: "notes.md" })).body).toMatchObject({ decision: "allow", taint: "internal" });
      // No forged raise or grant took effect: http_post under an internal context still goes to the gate.
      expect((await callTool(sc, "http_post", { url: "https://x.example/", body: "notes" })).body).toMatchObject({ decision: "ask" });
      expect(parseJsonLines(readFileSync(audit, "utf8")).length).toBeGreaterThanOrEqual(2);
    } finally {
      expect(await sc.stop()).toBe(0);
    }
  });

  it("a journal line written from outside the agent grants nothing after a restart; an audited allow-for-run does", async () => {
    const t = makeTree("outside");
    writeFileSync(join(t.dir, "config.toml"), "[tool_permissions]\nshell = 'allow'\nhttp_post = 'ask'\nwrite_file = 'ask'\n");
    const journal = join(t.audit, "outside", "state.jsonl");
    let sc = await startSidecar(t.args);
    try {
      expect((await callTool(sc, "write_file", { path: "a.txt", content: "a\n" }, "w1")).body).toMatchObject({ decision: "ask", approval: { id: "tool-w1" } });
      expect((await answerAndWait(sc, "tool-w1", "w1", "allowForRun")).body).toMatchObject({ decision: "allow" });
    } finally {
      expect(await sc.stop()).toBe(0);
    }
    // A party that can write the audit directory (not the agent) appends grants: bare, on the genuine call's
    // id, and a session raise no gate answer made.
    appendFileSync(journal, ['{"op":"grant","key":"http_post"}', '{"op":"grant","key":"http_post","call":"w1"}', '{"op":"raise","tool":"http_post"}'].join("\n") + "\n");
    sc = await startSidecar(t.args);
    try {
      expect(sc.stderr()).toContain("state journal: dropped 2 grant and 1 raise line(s) that no audited decision made");
      // The genuine approval survived the restart: write_file runs without asking.
      expect((await callTool(sc, "write_file", { path: "b.txt", content: "b\n" }, "w2")).body).toMatchObject({ decision: "allow" });
      // The forged grant did not: http_post still asks a person.
      expect((await callTool(sc, "http_post", { url: "https://x.example/", body: "b" }, "h1")).body).toMatchObject({ decision: "ask", approval: { id: "tool-h1", kind: "tool_approval" } });
      expect(readFileSync(journal, "utf8")).not.toContain("http_post");
    } finally {
      expect(await sc.stop()).toBe(0);
    }
  });
});

/** A raw request, so that Host and browser headers are exactly what is sent. */
function raw(url: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: "GET", headers, setHost: false }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => (text += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("finding 4: DNS rebinding and browsers", () => {
  let sc: SidecarProcess;
  beforeAll(async () => {
    sc = await startSidecar(makeTree("rebind").args);
  });
  afterAll(async () => {
    expect(await sc.stop()).toBe(0);
  });

  it("accepts only the Host it listens on, never a browser, and only the runtime with its token", async () => {
    const host = new URL(sc.url).host;
    const auth = { authorization: `Bearer ${sc.runtimeToken}` };
    expect((await raw(sc.url, "/v1/context/entries", { host, ...auth })).status).toBe(200);
    expect(await raw(sc.url, "/v1/context/entries", { host: `rebound.example:${new URL(sc.url).port}`, ...auth })).toMatchObject({ status: 403, body: { code: "host-not-allowed" } });
    expect(await raw(sc.url, "/v1/healthz", { host: "rebound.example" })).toMatchObject({ status: 403, body: { code: "host-not-allowed" } });
    expect(await raw(sc.url, "/v1/context/entries", { host, ...auth, origin: "http://rebound.example" })).toMatchObject({ status: 403, body: { code: "browser-request" } });
    expect(await raw(sc.url, "/v1/context/entries", { host, ...auth, "sec-fetch-site": "same-origin" })).toMatchObject({ status: 403, body: { code: "browser-request" } });
    expect(await raw(sc.url, "/v1/context/entries", { host })).toMatchObject({ status: 401, body: { code: "runtime-token-required" } });
    expect(await raw(sc.url, "/v1/context/entries", { host, authorization: `Bearer ${sc.token}` })).toMatchObject({ status: 401 });
  });
});

describe("finding 7: a call queued while the sidecar was stopped does not run after SIGCONT", () => {
  it("refuses it once the client has been told it did not run", async () => {
    const t = makeTree("frozen");
    const sc = await startSidecar(t.args);
    const client = createSidecarClient({ baseUrl: sc.url, token: sc.runtimeToken, timeoutMs: 500 });
    sc.proc.kill("SIGSTOP");
    try {
      const a = await client.callTool({ id: "late", tool: "shell", args: { command: "touch ran.txt" } });
      expect(a).toMatchObject({ decision: "deny", code: "sidecar-unavailable" });
    } finally {
      sc.proc.kill("SIGCONT");
    }
    const after = await client.waitForCall("late", "shell", 5);
    expect(after).toMatchObject({ decision: "deny", code: "client-gave-up" });
    expect(existsSync(join(t.work, "ran.txt"))).toBe(false);
    expect(await sc.stop()).toBe(0);
  });
});
