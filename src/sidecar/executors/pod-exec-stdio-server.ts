// Stdio MCP servers in a cluster: the server's command runs in the current stage's sandbox pod (never the
// sidecar's or the agent's container), as one long-lived pods/exec whose stdin and stdout carry the MCP
// messages over the exec websocket. The exec API never kills what it started when its stream ends, so the
// command runs under a small POSIX sh wrapper (STDIO_WRAPPER) that ends the server's whole session when the
// exec's stdin closes: closing the connection leaves no process behind in the sandbox pod. When the stage
// moves to another sandbox pod, the server is restarted there on its next call (`moved`). The server's env goes
// over the exec's stdin, never its command line, which the API server's audit log and the pod's /proc show.
import { PassThrough, Writable } from "node:stream";
import type { V1Status } from "@kubernetes/client-node";
import type { McpServer } from "../../api/leviath-policy.ts";
import type { RunPolicy } from "../../api/run-policy.ts";
import type { PodExec } from "../../kube/pod-exec.ts";
import type { StdioProcess } from "../gateway/capped-stdio.ts";
import type { StdioLauncher } from "../gateway/mcp-gateway.ts";
import type { PodTarget } from "./pod-exec-shell.ts";
import { parseExecStatus } from "./exec-status.ts";
import { quoteShellWord } from "./local-stdio-server.ts";
import { computePodTarget } from "./sandbox-targets.ts";
import type { RunStage } from "./shell.ts";

/**
 * Runs `"$@"` (the server and its arguments) in a new session fed from a FIFO that a relay fills from the exec's
 * stdin. Before any MCP message, stdin carries the server's env (buildStdioEnvFrame): a line with a byte count,
 * then that many bytes of `export NAME='value'` lines, read by `dd bs=1` (never past them) into a variable that
 * only the server's own subshell evaluates, so no value is on a command line, in the wrapper's environment or in
 * a file. When that stdin ends (the sidecar closed the connection, or the exec's stream was lost), the relay
 * kills the server's session, so every process it started dies with it; when the server ends by itself, what it
 * left in its session is killed and the exec ends with its exit code. Needs sh, mktemp, mkfifo, dd and setsid in
 * the sandbox image (busybox or coreutils + util-linux), and a writable /tmp (every sandbox pod has one).
 */
export const STDIO_WRAPPER = [
  'd=$(mktemp -d) && mkfifo "$d/in" || exit 126',
  // `read` takes one byte at a time from a pipe, and so does `dd bs=1`: the MCP messages after the env stay unread.
  'IFS= read -r n || exit 126',
  'case $n in ""|*[!0-9]*) exit 126 ;; esac',
  'e=$(dd bs=1 count="$n" 2>/dev/null) || exit 126',
  "exec 3<&0",
  '( eval "$e" && exec setsid "$@" ) <"$d/in" &',
  "pid=$!",
  // Both the session and the process: a server not yet past setsid() has no session of its own.
  // dd, not cat: busybox's cat copies with sendfile(2), which holds a pipe's bytes back until a whole block is in.
  '{ dd bs=65536 <&3 >"$d/in"; kill -KILL -"$pid"; kill -KILL "$pid"; } >/dev/null 2>&1 &',
  "exec 3<&-",
  'wait "$pid"; rc=$?',
  'kill -KILL -"$pid" 2>/dev/null',
  'rm -rf "$d"',
  'exit "$rc"',
].join("\n");

/** The name `$0` of the wrapper: what a `ps` in the sandbox pod shows for it. */
const WRAPPER_NAME = "leviath-mcp-stdio";
/** After its stdin is closed, how long the exec may take to end before the sidecar drops the stream itself. */
const CLOSE_GRACE_MS = 2000;

/** A name `export` takes as a variable, never as an option or a command. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The command line exec'd into the sandbox for one server: the wrapper, the command and its arguments, no env. */
export function buildStdioExecCommand(server: McpServer): string[] {
  return ["sh", "-c", STDIO_WRAPPER, WRAPPER_NAME, server.command!, ...(server.args ?? [])];
}

/** The env as the wrapper reads it first from the exec's stdin: a byte count line, then `export NAME='value'` lines. */
export function buildStdioEnvFrame(server: McpServer, env: Readonly<Record<string, string>>): Buffer {
  const script = Object.entries(env).map(([name, value]) => {
    if (!ENV_NAME.test(name)) throw new Error(`mcp server '${server.name}' env '${name}': not a variable name (letters, digits and '_')`);
    if (value.includes("\0")) throw new Error(`mcp server '${server.name}' env '${name}': a value holds a NUL byte, which no environment can`);
    return `export ${name}=${quoteShellWord(value)}\n`;
  }).join("");
  const body = Buffer.from(script, "utf8");
  return Buffer.concat([Buffer.from(`${body.length}\n`), body]);
}

/** Where a stdio server of this stage runs: the stage's sandbox pod; a stage of kind `none` has none to offer. */
export function computeStdioTarget(run: string, policy: RunPolicy, stage: RunStage, sandboxBase = run): PodTarget {
  if (stage.sandbox.kind === "none") return { error: `stage '${stage.name}' has no sandbox pod (kind none), and stdio MCP servers run only in one` };
  return computePodTarget(run, policy, stage, sandboxBase);
}

/** What the launcher is built from. */
export interface PodExecStdioOptions {
  readonly exec: PodExec;
  readonly namespace: string;
  /** Where a server started now runs (the current stage's sandbox pod). */
  readonly target: () => PodTarget;
  readonly closeGraceMs?: number;
}

/** A launcher that starts each stdio server with pods/exec in the current stage's sandbox pod. */
export function createPodExecStdioLauncher(opts: PodExecStdioOptions): StdioLauncher {
  return async (server, env): Promise<StdioProcess> => {
    const target = opts.target();
    if ("error" in target) throw new Error(`mcp server '${server.name}': ${target.error}`);
    const command = buildStdioExecCommand(server);
    const input = new PassThrough();
    // First on stdin, before the exec even opens: the wrapper reads the env before it relays anything.
    input.write(buildStdioEnvFrame(server, env));
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const closeListeners: (() => void)[] = [];
    const errorListeners: ((e: Error) => void)[] = [];
    let closed = false;
    const ended = (error?: Error) => {
      if (closed) return;
      closed = true;
      if (error !== undefined) for (const l of errorListeners) l(error);
      for (const l of closeListeners) l();
    };
    const where = `pod/${target.pod}`;
    let status: { exitCode: number } | { error: string } | undefined;
    const socket = await opts.exec.exec(opts.namespace, target.pod, target.container, command, stdout, stderr, input, false, (s: V1Status) => {
      status = parseExecStatus(s);
    }).catch((e: unknown) => {
      throw new Error(`mcp server '${server.name}': pods/exec into ${where} failed: ${(e as Error).message ?? String(e)}`);
    });
    socket.on("close", () => {
      const s = status;
      const why = s === undefined ? "its exec stream closed" : "error" in s ? s.error : `it exited with code ${s.exitCode}`;
      ended(s !== undefined && "exitCode" in s && s.exitCode === 0 ? undefined : new Error(`mcp server '${server.name}' in ${where} ended: ${why}`));
    });
    // The transport may destroy the stdin it holds: the exec's own input stays ours, so ending it still reaches the pod.
    const stdin = new Writable({
      write: (chunk: Buffer, _enc, done) => (input.writableEnded ? done(new Error(`mcp server '${server.name}' is closed`)) : input.write(chunk, done)),
    });
    return {
      stdin, stdout, stderr,
      onClose: (l) => void (closed ? queueMicrotask(l) : closeListeners.push(l)),
      onError: (l) => void errorListeners.push(l),
      kill() {
        if (closed) return;
        // The end of stdin is what the wrapper kills the server's session on; the stream goes in any case.
        input.end();
        setTimeout(() => socket.close(), opts.closeGraceMs ?? CLOSE_GRACE_MS).unref();
      },
      moved() {
        const now = opts.target();
        return "error" in now || now.pod !== target.pod || now.container !== target.container;
      },
    };
  };
}
