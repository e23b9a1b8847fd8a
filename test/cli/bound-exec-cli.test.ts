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

/**
 * A held command: it records what it has at its start (no Run, no runtime.json), then reads its binding from
 * LEVIATH_BINDING_FD to the pipe's end and records what came and whether runtime.json was on disk by then.
 */
const heldProbe = (root: string, config: string) => [process.execPath, "-e", `
const fs = require("node:fs"), net = require("node:net");
const at = (n) => require("node:path").join(${JSON.stringify(root)}, n);
fs.writeFileSync(at("started"), JSON.stringify({ run: process.env.LEVIATH_RUN ?? null, fd: process.env.LEVIATH_BINDING_FD ?? null, config: fs.existsSync(${JSON.stringify(config)}) }));
let text = "";
const pipe = new net.Socket({ fd: Number(process.env.LEVIATH_BINDING_FD), readable: true, writable: false });
pipe.on("data", (d) => (text += d));
pipe.on("end", () => {
  fs.writeFileSync(at("received"), JSON.stringify({ text, config: fs.existsSync(${JSON.stringify(config)}) }));
  process.exit(text === "" ? 3 : 0);
});`];

/**
 * A stand-in for the Run's sidecar: answers the binding ask with `answer`, every time; with `after`, only once that
 * file exists (as a pool sidecar holds the ask until the pod is bound).
 */
async function answeringSidecar(answer: unknown, after?: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    const reply = () => {
      if (after !== undefined && !existsSync(after) && !res.destroyed) {
        setTimeout(reply, 20);
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    };
    reply();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
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

  it("--held: starts the command at once with nothing of a Run, then hands it its binding through LEVIATH_BINDING_FD once the files are written", async () => {
    const root = makeTempDir("leviath-bound-exec-cli-");
    writeFileSync(join(root, "token"), "t0k3n\n");
    const config = join(root, "rt", "runtime.json");
    const b64 = (t: string) => Buffer.from(t).toString("base64");
    const sidecar = await answeringSidecar({ run: "r1", runtimeJson: '{"run":{"mode":"headless"}}', credentials: [
      { secretName: "model-key", as: "env", data: { API_KEY: b64("k-1") } },
      { secretName: "tls", as: "files", data: { "tls.crt": b64("CERT") } },
    ] }, join(root, "started"));
    try {
      const r = await runBoundExec(["--held", "--sidecar", sidecar.url, "--token-file", join(root, "token"), "--runtime-config", config, "--credentials-dir", join(root, "creds"), "--termination-log", join(root, "termination"), "--", ...heldProbe(root, config)], { LEVIATH_RUN: undefined, API_KEY: undefined });
      expect([r.code, r.stderr]).toEqual([0, expect.stringContaining("bound to Run r1; handing it to")]);
      // Started before the binding, with the pipe and nothing of the Run.
      expect(JSON.parse(readFileSync(join(root, "started"), "utf8"))).toEqual({ run: null, fd: "3", config: false });
      const received = JSON.parse(readFileSync(join(root, "received"), "utf8")) as { text: string; config: boolean };
      // runtime.json and the files credentials are on disk before the first byte; the env ones come through the pipe.
      expect(received.config).toBe(true);
      expect(JSON.parse(received.text)).toEqual({ run: "r1", env: { API_KEY: "k-1", LEVIATH_RUN: "r1", LEVIATH_RUNTIME_CONFIG: config } });
      expect(readFileSync(join(root, "creds", "tls", "tls.crt"), "utf8")).toBe("CERT");
    } finally {
      await sidecar.close();
    }
  });

  it.each([
    ["a binding that does not parse (an attacker's answer on the port)", { run: "../r1", runtimeJson: "{}", credentials: [] }, "the binding is malformed"],
    ["a refusal", undefined, "the sidecar refused the binding"],
  ])("--held: on %s, the held command gets nothing, is killed, and nothing is written", async (_, answer, why) => {
    const root = makeTempDir("leviath-bound-exec-cli-");
    const config = join(root, "rt", "runtime.json");
    let r: { code: number | null; stderr: string };
    if (answer === undefined) {
      mkdirSync(join(root, "work"));
      writeFileSync(join(root, "agent.leviath"), '[agent]\nname = "mini"\n\n[stages.survey]\nmode = "autonomous"\n');
      sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--run", "mini"]);
      r = await runBoundExec(["--held", "--sidecar", sc.url, "--token-file", sc.runtimeTokenFile, "--runtime-config", config, "--termination-log", join(root, "termination"), "--", ...heldProbe(root, config)]);
    } else {
      writeFileSync(join(root, "token"), "t0k3n\n");
      const sidecar = await answeringSidecar(answer);
      try {
        r = await runBoundExec(["--held", "--sidecar", sidecar.url, "--token-file", join(root, "token"), "--runtime-config", config, "--termination-log", join(root, "termination"), "--", ...heldProbe(root, config)]);
      } finally {
        await sidecar.close();
      }
    }
    expect([r.code, r.stderr]).toEqual([1, expect.stringContaining(why)]);
    expect(r.stderr).toContain("; stopping ");
    expect(readFileSync(join(root, "termination"), "utf8")).toContain(why);
    // Whatever it was doing when the answer came, it never read a binding, and nothing of a Run is on disk.
    expect(existsSync(join(root, "received")) ? JSON.parse(readFileSync(join(root, "received"), "utf8")) : undefined).toBeUndefined();
    expect(existsSync(config)).toBe(false);
  });

  it.each([
    ["an empty pipe (no binding)", "", 1, "no binding"],
    ["a malformed document", JSON.stringify({ run: "r1", env: { "A=B": "x" } }), 1, "malformed"],
    ["its binding", JSON.stringify({ run: "r1", env: { LEVIATH_RUN: "r1" } }), 2, "runtime.json"],
  ])("leviath agent, held, on %s: reads runtime.json only once it has its binding", async (_, text, code, said) => {
    const root = makeTempDir("leviath-held-agent-");
    const proc = spawn(process.execPath, [repo("bin/leviath"), "agent", "--runtime-config", join(root, "runtime.json"), "--termination-log", join(root, "termination")], {
      env: { ...process.env, LEVIATH_BINDING_FD: "3", LEVIATH_RUN: undefined }, stdio: ["ignore", "ignore", "pipe", "pipe"],
    });
    let stderr = "";
    proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => proc.once("exit", resolve));
    (proc.stdio[3] as NodeJS.WritableStream).end(text);
    expect(await exited).toBe(code);
    expect(stderr).toContain(said);
    // Without its binding it never got as far as the runtime.json it would read (the one it has not is named then).
    if (code === 1) expect(stderr).not.toContain("runtime.json");
  });

  it("--held: a command that ends before its binding ends bound-exec with its status at once, its held ask given up", async () => {
    const root = makeTempDir("leviath-bound-exec-cli-");
    writeFileSync(join(root, "token"), "t0k3n\n");
    // The unbound sidecar holds the ask for its full default (20 s, longer than this test may wait for it).
    const unbound = await listenUnbound("127.0.0.1", 0, "t0k3n");
    const address = unbound.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    try {
      const r = await runBoundExec(["--held", "--sidecar", `http://127.0.0.1:${port}`, "--token-file", join(root, "token"), "--termination-log", join(root, "termination"), "--", process.execPath, "-e", "process.exit(7)"]);
      expect([r.code, r.stderr]).toEqual([7, expect.stringContaining("ended with status 7 before its binding")]);
    } finally {
      await unbound.close();
    }
  }, 15_000);
});
