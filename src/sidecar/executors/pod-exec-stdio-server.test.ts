import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import type { V1Status } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import type { McpServer } from "../../api/leviath-policy.ts";
import type { PodExec } from "../../kube/pod-exec.ts";
import { buildMcpReadFailureMessage } from "../../policy/size-caps.ts";
import { McpGateway } from "../gateway/mcp-gateway.ts";
import type { VarSource } from "../gateway/server-vars.ts";
import { buildStdioEnvFrame, buildStdioExecCommand, computeStdioTarget, createPodExecStdioLauncher } from "./pod-exec-stdio-server.ts";
import type { PodTarget } from "./pod-exec-shell.ts";

// The launcher over a stand-in for the exec API that plays the kubelet's part on this machine: it runs the exec'd
// command line as a local process (the real wrapper under the real sh), its stdin fed from the exec's input and
// closed when the stream is, its exit code sent as the exec's final status. Behind it, the reference
// server-everything from npm, or small sh servers. The same path on a real node: test/e2e/mcp-sandbox.test.ts.
const EVERYTHING = join(import.meta.dirname, "../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined, child: () => silent } as never;

/** A directory where sh and the wrapper's tools are busybox's applets, to run the wrapper as the sandbox image would. */
function busyboxBin(): string {
  const dir = mkdtempSync(join(tmpdir(), "leviath-busybox-"));
  for (const applet of ["sh", "mktemp", "mkfifo", "dd", "cat", "setsid", "rm", "env", "sleep", "head", "tr"]) symlinkSync("/usr/bin/busybox", join(dir, applet));
  return dir;
}

function localExec(seen: { pod: string; command: string[] }[], bin?: string): PodExec {
  return {
    async exec(_ns: string, pod: string, _container: string, command: string | string[], stdout: Writable | null, stderr: Writable | null, stdin: Readable | null, _tty: boolean, cb?: (s: V1Status) => void) {
      const argv = command as string[];
      seen.push({ pod, command: argv });
      const env = bin === undefined ? process.env : { ...process.env, PATH: `${bin}:${process.env["PATH"] ?? ""}` };
      const child = spawn(bin === undefined ? argv[0]! : join(bin, argv[0]!), argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], env });
      stdin!.pipe(child.stdin);
      child.stdout.on("data", (d: Buffer) => stdout!.write(d));
      child.stderr.on("data", (d: Buffer) => stderr!.write(d));
      const socket = Object.assign(new EventEmitter(), { close: () => child.stdin.end() });
      child.on("close", (code) => {
        cb?.(code === 0 ? { status: "Success" } : { status: "Failure", details: { causes: [{ reason: "ExitCode", message: String(code) }] } });
        socket.emit("close");
      });
      return socket as never;
    },
  };
}

/** Live processes whose /proc/<pid>/<file> holds `text`. */
function processesHolding(text: string, file: "environ" | "cmdline" = "environ"): number[] {
  const found: number[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z")) continue;
      if (readFileSync(`/proc/${pid}/${file}`, "utf8").includes(text)) found.push(Number(pid));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** Live processes whose environment carries `mark` (every process a server started inherits it). */
const processesMarked = (mark: string): number[] => processesHolding(`LEVIATH_TEST_MARK=${mark}`);

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) if (check()) return;
  throw new Error(`timed out waiting for ${what}`);
}

/** What no command line and no process but the opted-in server may ever hold. */
const SECRET_MARK = `tok-${randomUUID()}`;

/** The Secret `everything-mcp` as the kubelet mounts it into the sidecar container: a file per key. */
function secretsDir(): { vars: VarSource; value: string } {
  const dir = mkdtempSync(join(tmpdir(), "leviath-mcp-secrets-"));
  const value = `${SECRET_MARK} it's "quoted" $(echo no) \`x\`\nline two`;
  mkdirSync(join(dir, "everything-mcp"));
  writeFileSync(join(dir, "everything-mcp", "TOKEN"), value);
  return { vars: { kind: "secrets", dir }, value };
}

/** server-everything with its TOKEN from its Secret, and a literal mark on every process it starts. */
const secretServer = (mark: string): McpServer => ({
  name: "everything", command: process.execPath, args: [EVERYTHING, "stdio"], env: { TOKEN: "${TOKEN}", LEVIATH_TEST_MARK: mark }, secretRef: { name: "everything-mcp" },
});

const gateways: McpGateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});

function gatewayOver(server: McpServer, target: () => PodTarget, seen: { pod: string; command: string[] }[], bin?: string, vars: VarSource = { kind: "env", env: {} }): McpGateway {
  const g = new McpGateway({ servers: [server], vars, log: silent, launchStdio: createPodExecStdioLauncher({ exec: localExec(seen, bin), namespace: "team", target, closeGraceMs: 200 }) });
  gateways.push(g);
  return g;
}

describe("buildStdioExecCommand and buildStdioEnvFrame", () => {
  it("puts no env on the command line: the wrapper, the command and its arguments only", () => {
    const argv = buildStdioExecCommand({ name: "fs", command: "mcp-fs", args: ["/workspace", "a b"], env: { TOKEN: "x y" } });
    expect(argv.slice(0, 2)).toEqual(["sh", "-c"]);
    expect(argv.slice(3)).toEqual(["leviath-mcp-stdio", "mcp-fs", "/workspace", "a b"]);
  });

  it("frames the env for the exec's stdin (a byte count, then quoted exports), and refuses a name export would take for an option or a NUL", () => {
    expect(buildStdioEnvFrame({ name: "fs", command: "mcp-fs" }, { TOKEN: "it's é" }).toString()).toBe("26\nexport TOKEN='it'\\''s é'\n");
    expect(buildStdioEnvFrame({ name: "fs", command: "mcp-fs" }, {}).toString()).toBe("0\n");
    expect(() => buildStdioEnvFrame({ name: "fs", command: "mcp-fs" }, { "-i": "1" })).toThrow("mcp server 'fs' env '-i': not a variable name");
    expect(() => buildStdioEnvFrame({ name: "fs", command: "mcp-fs" }, { A: "x\0y" })).toThrow("mcp server 'fs' env 'A': a value holds a NUL byte");
  });
});

describe("computeStdioTarget", () => {
  it("never offers the engine pod's agent container: a stage of kind none has no place for a stdio server", () => {
    const policy = { stages: [{ name: "plan", sandbox: { kind: "none" } }] } as never;
    expect(computeStdioTarget("run-1", policy, (policy as { stages: never[] }).stages[0]!)).toEqual({ error: "stage 'plan' has no sandbox pod (kind none), and stdio MCP servers run only in one" });
  });
});

describe.each(["dash", "busybox"])("a stdio MCP server over pods/exec (the wrapper under %s)", { timeout: 30_000 }, (shell) => {
  // The host's sh is dash; the sandbox image's is busybox (scripts/build-images).
  const bin = shell === "busybox" ? busyboxBin() : undefined;
  it("lists and calls server-everything's tools through the exec stream, and leaves no process when the connection closes", async () => {
    const mark = randomUUID();
    const seen: { pod: string; command: string[] }[] = [];
    const g = gatewayOver({ name: "everything", command: process.execPath, args: [EVERYTHING, "stdio"], env: { LEVIATH_TEST_MARK: mark } }, () => ({ pod: "run-1-sbx-a", container: "sandbox" }), seen, bin);
    await g.ready();
    expect(g.tools().map((t) => t.name)).toContain("everything__echo");
    expect(await g.call("everything__echo", { message: "hi" })).toEqual({ text: "Echo: hi", isError: false });
    expect(seen).toHaveLength(1);
    expect(processesMarked(mark).length).toBeGreaterThan(0);
    await g.close();
    await until(() => processesMarked(mark).length === 0, "the server's processes to end");
  });

  it("a Secret's value the admin let into the sandbox reaches the server over stdin: never the exec's command line, nor the wrapper's environment", async () => {
    const { vars, value } = secretsDir();
    const mark = randomUUID();
    const seen: { pod: string; command: string[] }[] = [];
    const server: McpServer = { ...secretServer(mark), secretEnvInSandbox: true };
    const g = gatewayOver(server, () => ({ pod: "run-1-sbx-a", container: "sandbox" }), seen, bin, vars);
    await g.ready();
    // The server has it, byte for byte (quotes, a newline, `$(...)` and all): the trade the admin chose.
    expect(JSON.parse((await g.call("everything__get-env", {})).text)).toMatchObject({ TOKEN: value, LEVIATH_TEST_MARK: mark });
    // What the API server's audit log and the pod's /proc/<pid>/cmdline would show: the command line, without it.
    expect(seen).toHaveLength(1);
    expect(JSON.stringify(seen)).not.toContain(SECRET_MARK);
    expect(processesHolding(SECRET_MARK, "cmdline")).toEqual([]);
    // In the pod, only the server's own processes hold it: not the wrapper (nor its relay), which the model's commands share.
    const holding = processesHolding(SECRET_MARK);
    expect(holding.length).toBeGreaterThan(0);
    expect(holding.sort()).toEqual(processesMarked(mark).sort());
    const wrappers = processesHolding("leviath-mcp-stdio", "cmdline");
    expect(wrappers.length).toBeGreaterThan(0);
    expect(wrappers.filter((p) => holding.includes(p))).toEqual([]);
  });

  it("kills what the server started when the connection closes, grandchildren included", async () => {
    const mark = randomUUID();
    // A server that leaves a grandchild behind, then answers initialize and nothing else.
    const script = `sleep 600 & read -r line; printf '%s\\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}}'; read -r line; read -r line; printf '%s\\n' '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}'; cat >/dev/null`;
    const g = gatewayOver({ name: "left", command: "sh", args: ["-c", script], env: { LEVIATH_TEST_MARK: mark } }, () => ({ pod: "run-1-sbx-a", container: "sandbox" }), [], bin);
    await g.ready();
    await until(() => processesMarked(mark).length >= 2, "the server and its grandchild");
    await g.close();
    await until(() => processesMarked(mark).length === 0, "the server and its grandchild to end");
  });

  it("drops the connection past the 1 MiB line cap with upstream's message, and the server is gone", async () => {
    const mark = randomUUID();
    // Answers initialize and tools/list, then one tools/call with a line over the cap (and writes to stderr first).
    const script = `read -r l; printf '%s\\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}}'; read -r l; read -r l; printf '%s\\n' '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"dump","inputSchema":{"type":"object"}}]}}'; read -r l; echo 'dumping' >&2; sleep 0.2; printf '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"'; head -c 1100000 /dev/zero | tr '\\0' x; printf '"}]}}\\n'; sleep 600`;
    const g = gatewayOver({ name: "huge", command: "sh", args: ["-c", script], env: { LEVIATH_TEST_MARK: mark } }, () => ({ pod: "run-1-sbx-a", container: "sandbox" }), [], bin);
    await g.ready();
    expect(g.tools().map((t) => t.name)).toEqual(["huge__dump"]);
    const r = await g.call("huge__dump", {});
    expect(r).toEqual({ text: `[error] ${buildMcpReadFailureMessage("dumping")}`, isError: true });
    await until(() => processesMarked(mark).length === 0, "the capped server to end");
  });
});

describe("a stdio MCP server whose env names its Secret, without the admin's opt-in", { timeout: 30_000 }, () => {
  it("is refused naming the server and the entry: nothing is exec'd, and no process holds the value", async () => {
    const { vars } = secretsDir();
    const mark = randomUUID();
    const seen: { pod: string; command: string[] }[] = [];
    const g = gatewayOver(secretServer(mark), () => ({ pod: "run-1-sbx-a", container: "sandbox" }), seen, undefined, vars);
    await g.ready();
    expect(g.servers()).toEqual([{
      name: "everything", offered: false, tools: 0,
      message: "mcp server 'everything' env 'TOKEN': ${TOKEN} would put a value of Secret 'everything-mcp' into the sandbox pod, where the model's commands can read it; the server is not started (the admin allows it with secretEnvInSandbox: true on the server)",
    }]);
    expect(g.tools()).toEqual([]);
    expect(seen).toEqual([]);
    expect(processesHolding(SECRET_MARK)).toEqual([]);
    expect(processesMarked(mark)).toEqual([]);
  });
});

describe("a stdio MCP server when the stage moves", { timeout: 30_000 }, () => {
  it("is restarted in the new stage's sandbox pod on its next call, the old one ended; a stage without one fails the call", async () => {
    const mark = randomUUID();
    const seen: { pod: string; command: string[] }[] = [];
    let target: PodTarget = { pod: "run-1-sbx-a", container: "sandbox" };
    const g = gatewayOver({ name: "everything", command: process.execPath, args: [EVERYTHING, "stdio"], env: { LEVIATH_TEST_MARK: mark } }, () => target, seen);
    await g.ready();
    expect((await g.call("everything__echo", { message: "one" })).text).toBe("Echo: one");
    const first = processesMarked(mark);
    target = { pod: "run-1-sbx-b", container: "sandbox" };
    expect((await g.call("everything__echo", { message: "two" })).text).toBe("Echo: two");
    expect(seen.map((s) => s.pod)).toEqual(["run-1-sbx-a", "run-1-sbx-b"]);
    await until(() => first.every((p) => !processesMarked(mark).includes(p)), "the first stage's server to end");
    target = { error: "stage 'plan' has no sandbox pod (kind none), and stdio MCP servers run only in one" };
    expect(await g.call("everything__echo", { message: "three" })).toEqual({
      text: "[error] MCP server 'everything' failed: mcp server 'everything': stage 'plan' has no sandbox pod (kind none), and stdio MCP servers run only in one", isError: true,
    });
    await until(() => processesMarked(mark).length === 0, "no server left running");
  });
});

describe("a stdio MCP server whose sandbox is not running yet", { timeout: 30_000 }, () => {
  it("does not hold the gateway's close (the sidecar's stop) while its exec waits, and is ended once it is up", async () => {
    const mark = randomUUID();
    let release!: () => void;
    const waiting = new Promise<void>((resolve) => (release = resolve));
    const inner = localExec([]);
    const exec: PodExec = { exec: async (...args: Parameters<PodExec["exec"]>) => (await waiting, inner.exec(...args)) };
    const g = new McpGateway({
      servers: [{ name: "everything", command: process.execPath, args: [EVERYTHING, "stdio"], env: { LEVIATH_TEST_MARK: mark } }], vars: { kind: "env", env: {} }, log: silent,
      launchStdio: createPodExecStdioLauncher({ exec, namespace: "team", target: () => ({ pod: "run-1-sbx-a", container: "sandbox" }), closeGraceMs: 200 }),
    });
    const listed = g.ready();
    await g.close();
    release();
    await listed;
    // Started once its sandbox "ran", then closed at once: nothing is left.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await until(() => processesMarked(mark).length === 0, "the late server to end");
  });
});
