// `leviath bound-exec` as a process: its help, its flags, and that it fails closed, starting nothing, when no
// binding comes in time or the sidecar beside it is not a pool pod's (a cold sidecar has no binding to hand out).
// The binding itself, from a real pool sidecar bound through the real API server: test/integration/bound-exec.test.ts.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";
import { listenUnbound } from "../../src/sidecar/http/unbound-server.ts";
import { makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

/** The command bound-exec would start: it leaves a file behind, so a test sees that it never ran. */
const marker = (root: string) => [process.execPath, "-e", `require("node:fs").writeFileSync(${JSON.stringify(join(root, "started"))}, "")`];

function runBoundExec(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, [repo("bin/leviath"), "bound-exec", ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => proc.once("exit", (code) => resolve({ code, stderr })));
}

let sc: SidecarProcess | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

describe("leviath bound-exec", () => {
  it("says what it does, how long it waits and how it exits", () => {
    const r = leviath(["bound-exec", "--help"]);
    expect(r.status).toBe(0);
    for (const text of ["-- COMMAND [ARG...]", "POST /v1/binding", "--wait-seconds N", "(default 3600)", "128 + the signal's number", "without starting COMMAND"]) expect(r.stdout).toContain(text);
    expect(leviath(["--help"]).stdout).toContain("bound-exec -- CMD...");
  });

  it("needs a command after -- and the runtime token file", () => {
    const none = leviath(["bound-exec", "--token-file", "/t"]);
    expect([none.status, none.stderr]).toEqual([2, expect.stringContaining("no command: leviath bound-exec [options] -- COMMAND")]);
    const before = leviath(["bound-exec", "--token-file", "/t", "node", "--", "x"]);
    expect([before.status, before.stderr]).toEqual([2, expect.stringContaining("unexpected argument 'node' (the command goes after --)")]);
    const token = leviath(["bound-exec", "--", "true"], { env: { LEVIATH_SIDECAR_TOKEN_FILE: undefined } });
    expect([token.status, token.stderr]).toEqual([2, expect.stringContaining("no runtime token file")]);
  });

  it("waits for --wait-seconds while no sidecar answers, then exits 1 without starting the command", async () => {
    const root = makeTempDir("leviath-bound-exec-cli-");
    const r = await runBoundExec(["--wait-seconds", "1", "--sidecar", "http://127.0.0.1:9", "--token-file", join(root, "no-token"), "--termination-log", join(root, "termination"), "--", ...marker(root)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no binding within 1 s (the sidecar at http://127.0.0.1:9 is not bound to a Run); not starting");
    // The Run's Completed condition says why, as for a runtime that fails.
    expect(readFileSync(join(root, "termination"), "utf8")).toMatch(/^leviath bound-exec: no binding within 1 s .*; not starting /);
    expect(existsSync(join(root, "started"))).toBe(false);
  });

  it("exits 1 at once, starting nothing, when the sidecar beside it has no binding to hand out (a cold Run's)", async () => {
    const root = makeTempDir("leviath-bound-exec-cli-");
    mkdirSync(join(root, "work"));
    writeFileSync(join(root, "agent.leviath"), '[agent]\nname = "mini"\n\n[stages.survey]\nmode = "autonomous"\n');
    sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--run", "mini"]);
    const r = await runBoundExec(["--sidecar", sc.url, "--token-file", sc.runtimeTokenFile, "--runtime-config", join(root, "runtime.json"), "--termination-log", join(root, "termination"), "--", ...marker(root)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the sidecar refused the binding (404 not-found): no route POST /v1/binding; not starting");
    expect(existsSync(join(root, "started"))).toBe(false);
    expect(existsSync(join(root, "runtime.json"))).toBe(false);
  });

  it("asks again at once when the unbound sidecar releases its held ask, and reaches the Run's sidecar as soon as it listens", async () => {
    const root = makeTempDir("leviath-bound-exec-cli-");
    writeFileSync(join(root, "token"), "t0k3n\n");
    const unbound = await listenUnbound("127.0.0.1", 0, "t0k3n");
    let asks = 0;
    unbound.server.on("request", () => asks++);
    const address = unbound.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const r = runBoundExec(["--sidecar", `http://127.0.0.1:${port}`, "--token-file", join(root, "token"), "--runtime-config", join(root, "rt", "runtime.json"), "--credentials-dir", join(root, "creds"), "--termination-log", join(root, "termination"), "--", ...marker(root)]);
    // The process's first ask (however long its start takes on a loaded machine), then a while with it held:
    // one ask, held: the runtime does not ask again and again while nothing binds.
    for (let waited = 0; asks === 0 && waited < 60_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(asks).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(asks).toBe(1);
    await unbound.close();
    // The takeover's gap, then the Run's sidecar on the same port.
    await new Promise((resolve) => setTimeout(resolve, 150));
    const bound: Server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ run: "r1", runtimeJson: "{}", credentials: [] }));
    });
    await new Promise<void>((resolve) => bound.listen(port, "127.0.0.1", resolve));
    try {
      const done = await r;
      expect([done.code, done.stderr]).toEqual([0, expect.stringContaining("bound to Run r1")]);
      expect(existsSync(join(root, "started"))).toBe(true);
      // Connection failures during the gap were retried until the Run's sidecar listened (how soon is the bench's
      // to measure, not a test's).
    } finally {
      bound.closeAllConnections();
      await new Promise((resolve) => bound.close(resolve));
    }
  });

  it("asks only once per hold while nothing binds", async () => {
    const root = makeTempDir("leviath-bound-exec-cli-");
    writeFileSync(join(root, "token"), "t0k3n\n");
    const unbound = await listenUnbound("127.0.0.1", 0, "t0k3n", 300);
    let asks = 0;
    unbound.server.on("request", () => asks++);
    const address = unbound.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    try {
      const r = await runBoundExec(["--wait-seconds", "2", "--sidecar", `http://127.0.0.1:${port}`, "--token-file", join(root, "token"), "--termination-log", join(root, "termination"), "--", ...marker(root)]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("no binding within 2 s");
      // At most about 2 s / 300 ms asks (each released at the hold's bound, then asked again), never a tight loop;
      // at least a second one after the first release, however loaded the machine.
      expect(asks).toBeGreaterThanOrEqual(2);
      expect(asks).toBeLessThanOrEqual(9);
      expect(existsSync(join(root, "started"))).toBe(false);
    } finally {
      await unbound.close();
    }
  });
});
