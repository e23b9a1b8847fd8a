// `leviath bound-exec -- COMMAND...`: the agent container's command in a warm pool's pod (docs/controller.md, "Late
// binding, in the pod"). The pod was started before any Run, so nothing of a Run is in its spec: this waits until the
// sidecar beside it is bound, asks it once for the binding over loopback with the runtime token (the same file a cold
// runtime reads, LEVIATH_SIDECAR_TOKEN_FILE), writes runtime.json and the `files` credentials where a cold engine pod
// mounts them (in-memory volumes of the agent container alone), and starts COMMAND with the `env` credentials in its
// environment, as the kubelet's `envFrom` would have: a runtime cannot tell a bound pool pod from a cold one. It fails
// closed: no binding within --wait-seconds, a refusal or an answer that does not parse, and COMMAND never starts.
// With --held (the pool's runtimeStart: with-pod) COMMAND starts at once instead, with LEVIATH_BINDING_FD naming a
// pipe from this process, and is sent its binding through it once the files are written (docs/runtime.md, "A runtime
// started with its pool pod"): the same checks, the same files, and nothing of any Run in it before; no binding, and
// the pipe ends empty and COMMAND is killed.
import { spawn, type ChildProcess } from "node:child_process";
import type { Writable } from "node:stream";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { dirname, resolve } from "node:path";
import { BINDING_FD, BINDING_FD_ENV, BINDING_HOLD_MS, BINDING_ROUTE, type HeldBinding } from "../api/binding.ts";
import { createSidecarClient, type BindingAsk, type SidecarClient } from "../runtime/sidecar-client.ts";
import { DEFAULT_POD_SETTINGS } from "../sandbox/pod-settings.ts";
import { ENGINE_PATHS, RUNTIME_CONFIG_FILE } from "../sandbox/pods.ts";
import { parseCommandArgs } from "./args.ts";
import { planBinding, type BindingPlan } from "./bound-exec-plan.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";
import { parsePositiveInt } from "./sidecar-options.ts";

/** How long bound-exec waits for its binding unless told otherwise: a pool pod unbound this long ends and is replaced. */
const DEFAULT_WAIT_SECONDS = 3600;
/** The sidecar's loopback address in an engine pod (the pod sets LEVIATH_SIDECAR_URL; this is its default port). */
const DEFAULT_SIDECAR_URL = `http://127.0.0.1:${DEFAULT_POD_SETTINGS.sidecarPort}`;
/** How often, at most, it asks while the sidecar answers at once (loopback; an unbound sidecar holds the ask instead). */
const ASK_INTERVAL_MS = 100;
/**
 * How often it retries a connection that fails just after a held ask was released: the sidecar is bound and its
 * port is between the unbound server and the Run's sidecar, for the moments the takeover takes.
 */
const GAP_RETRY_MS = 15;
/** How long after a release connection failures are retried that fast (then: every {@link ASK_INTERVAL_MS}). */
const GAP_WINDOW_MS = 10_000;
/** The longest one ask may take: longer than the unbound sidecar holds it, short of a sidecar that hangs. */
const ASK_TIMEOUT_MS = BINDING_HOLD_MS + 10_000;
/** The signals a wrapper passes on: the kubelet's stop, an interrupt, and the ones a runtime may use. */
const FORWARDED = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"] as const;

/** `leviath bound-exec --help`. */
export const BOUND_EXEC_HELP = `Usage: leviath bound-exec [options] -- COMMAND [ARG...]

The agent container's command in a warm pool's pod (docs/controller.md, "Late binding, in the pod"): waits until
the sidecar beside it is bound to a Run, asks it once for the binding (POST ${BINDING_ROUTE} on loopback, with the
runtime token), writes the Run's runtime.json and its 'files' credentials where a cold engine pod mounts them
(--runtime-config, --credentials-dir/<secretName>/<key>, mode 0400), and starts COMMAND with the 'env'
credentials added to its environment (every key of the Secret a variable, a later Secret winning, the pod's own
LEVIATH_* and HOME kept) and LEVIATH_RUN and LEVIATH_RUNTIME_CONFIG set. SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1
and SIGUSR2 are passed on to COMMAND; bound-exec exits with COMMAND's status (128 + the signal's number when a
signal ended it).

While the sidecar is not listening, has not written the token file, refuses the token (a restarted unbound
sidecar writes a new one) or answers 503 not-bound, it asks again, for --wait-seconds; then it exits 1 without
starting COMMAND. An unbound pool sidecar holds the ask until it is bound and answers it with the binding once the
Run's sidecar is built (an ask it did not hand the binding to, not-bound), or for ${BINDING_HOLD_MS / 1000} s and
then not-bound: bound-exec asks again at once after a held not-bound, retrying every ${GAP_RETRY_MS} ms while the
Run's sidecar takes over the port; an answer that comes at once is asked again ${ASK_INTERVAL_MS} ms after the last
ask. Any other
answer (the binding already handed out, a credential Secret the Run's Role cannot read, an answer that does not
parse) exits 1 at once without starting COMMAND.

With --held, COMMAND starts at once, before any binding, with ${BINDING_FD_ENV}=${BINDING_FD} naming a pipe from
bound-exec: once the binding is written as above, bound-exec writes COMMAND one JSON document through it (the Run's
name and the variables to add to its environment: the 'env' credentials, LEVIATH_RUN, LEVIATH_RUNTIME_CONFIG) and
closes it (docs/runtime.md, "A runtime started with its pool pod"). When no binding comes or it is refused, the pipe
closes with nothing written and COMMAND is killed; bound-exec exits 1. A COMMAND that ends before its binding ends
bound-exec with its status.

Options:
      --held                 start COMMAND now and hand it the binding through ${BINDING_FD_ENV}
      --sidecar URL          the sidecar (default: $LEVIATH_SIDECAR_URL, else ${DEFAULT_SIDECAR_URL})
      --token-file FILE      the sidecar's runtime token (default: $LEVIATH_SIDECAR_TOKEN_FILE)
      --runtime-config FILE  where runtime.json is written (default: $LEVIATH_RUNTIME_CONFIG, else
                             ${RUNTIME_CONFIG_FILE})
      --credentials-dir DIR  where 'files' credentials are written (default ${ENGINE_PATHS.credentials})
      --wait-seconds N       how long to wait for the binding (default ${DEFAULT_WAIT_SECONDS})
      --termination-log FILE where to say why COMMAND was not started (default /dev/termination-log: the
                             kubelet puts it in the Run's Completed condition, as for a runtime that fails)
  -h, --help                 show this help

Exit status: COMMAND's; 1 when no binding came in time, or it was refused or malformed (COMMAND not started);
2 usage; 127 when COMMAND cannot be started.
`;

const OPTIONS = {
  held: { type: "boolean" },
  sidecar: { type: "string" },
  "token-file": { type: "string" },
  "runtime-config": { type: "string" },
  "credentials-dir": { type: "string" },
  "wait-seconds": { type: "string" },
  "termination-log": { type: "string" },
} as const;

/** One ask, with the token as the file holds it now (a restarted unbound sidecar writes a new one): unreadable, a wait. */
async function ask(link: SidecarClient, tokenFile: string, timeoutMs: number): Promise<BindingAsk> {
  let token: string;
  try {
    token = readFileSync(tokenFile, "utf8").trim();
  } catch {
    return { kind: "wait", unreachable: false };
  }
  link.setToken(token);
  return link.askBinding(Math.max(1, Math.min(timeoutMs, ASK_TIMEOUT_MS)));
}

/**
 * Asks until an answer or a refusal comes, or the deadline passes. Asks start at most every {@link ASK_INTERVAL_MS}:
 * one the sidecar held that long (released when it was bound, or at the hold's bound) is followed by the next at
 * once, and for a while after such a release, a connection that fails is retried every {@link GAP_RETRY_MS}.
 */
async function waitForBinding(url: string, tokenFile: string, waitSeconds: number): Promise<BindingAsk> {
  const link = createSidecarClient({ baseUrl: url });
  const deadline = Date.now() + waitSeconds * 1000;
  let releasedAt = -Infinity;
  for (;;) {
    const started = Date.now();
    const asked = await ask(link, tokenFile, deadline - started);
    if (asked.kind !== "wait") return asked;
    const now = Date.now();
    if (now >= deadline) return { kind: "refused", message: `no binding within ${waitSeconds} s (the sidecar at ${url} is not bound to a Run)` };
    if (!asked.unreachable && now - started >= ASK_INTERVAL_MS) releasedAt = now;
    const interval = asked.unreachable && now - releasedAt < GAP_WINDOW_MS ? GAP_RETRY_MS : ASK_INTERVAL_MS;
    const wait = Math.min(started + interval - now, deadline - now);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
}

/** Writes the plan's files, each new (never over an existing one) and 0400, then closes each credential's directory. */
function writePlan(plan: BindingPlan): void {
  for (const file of plan.files) {
    mkdirSync(dirname(file.path), { recursive: true, mode: 0o700 });
    writeFileSync(file.path, file.bytes, { flag: "wx", mode: 0o400 });
  }
  for (const dir of plan.closedDirs) chmodSync(dir, 0o500);
}

/** A started COMMAND: its process, its exit status once it ends (signals passed on meanwhile), and with --held, its binding's pipe. */
interface Started {
  readonly child: ChildProcess;
  readonly exited: Promise<number>;
  readonly pipe: Writable | undefined;
}

/** Starts COMMAND (with --held, with the binding's pipe as descriptor {@link BINDING_FD}), passing signals on. */
function startCommand(command: readonly string[], env: Record<string, string | undefined>, io: CliIo, held: boolean): Started {
  const child = spawn(command[0]!, command.slice(1), { stdio: held ? ["inherit", "inherit", "inherit", "pipe"] : "inherit", env: held ? { ...env, [BINDING_FD_ENV]: String(BINDING_FD) } : env });
  const pipe = held ? (child.stdio[BINDING_FD] as Writable | null) ?? undefined : undefined;
  // A runtime that ended before its binding closes the pipe: a write then fails, and is no crash of bound-exec.
  pipe?.on("error", () => undefined);
  const exited = new Promise<number>((done) => {
    const forward = (signal: NodeJS.Signals) => void child.kill(signal);
    for (const s of FORWARDED) process.on(s, forward);
    child.once("error", (err) => {
      io.stderr(`leviath bound-exec: cannot start '${command[0]}': ${err.message}\n`);
      done(127);
    });
    child.once("exit", (code, signal) => {
      for (const s of FORWARDED) process.off(s, forward);
      done(code ?? 128 + (signal === null ? 0 : constants.signals[signal]));
    });
  });
  return { child, exited, pipe };
}

/** Sends a held COMMAND its binding and closes the pipe. */
function sendBinding(pipe: Writable, binding: HeldBinding): Promise<void> {
  return new Promise((resolve) => pipe.end(JSON.stringify(binding), () => resolve()));
}

/** What bound-exec runs with, from its flags and the pool pod's environment (undefined: --help was asked). */
function readFlags(argv: string[], io: CliIo) {
  const split = argv.indexOf("--");
  const { values: v, positionals } = parseCommandArgs(split < 0 ? argv : argv.slice(0, split), OPTIONS);
  if (v.help) return undefined;
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}' (the command goes after --)`);
  const command = split < 0 ? [] : argv.slice(split + 1);
  if (command.length === 0) throw new UsageError("no command: leviath bound-exec [options] -- COMMAND [ARG...]");
  const tokenFile = v["token-file"] ?? io.env["LEVIATH_SIDECAR_TOKEN_FILE"];
  if (tokenFile === undefined) throw new UsageError("no runtime token file: pass --token-file or set LEVIATH_SIDECAR_TOKEN_FILE");
  const url = v.sidecar ?? io.env["LEVIATH_SIDECAR_URL"] ?? DEFAULT_SIDECAR_URL;
  if (!URL.canParse(url)) throw new UsageError(`the sidecar's address '${url}' is not a URL (--sidecar, $LEVIATH_SIDECAR_URL)`);
  return {
    command,
    held: v.held === true,
    tokenFile: resolve(io.cwd, tokenFile),
    url,
    waitSeconds: parsePositiveInt("--wait-seconds", v["wait-seconds"], DEFAULT_WAIT_SECONDS),
    terminationLog: resolve(io.cwd, v["termination-log"] ?? "/dev/termination-log"),
    at: {
      runtimeConfig: resolve(io.cwd, v["runtime-config"] ?? io.env["LEVIATH_RUNTIME_CONFIG"] ?? RUNTIME_CONFIG_FILE),
      credentialsDir: resolve(io.cwd, v["credentials-dir"] ?? ENGINE_PATHS.credentials),
    },
  };
}

/** The binding written where the runtime reads it, or why COMMAND must not start. */
function applyBinding(asked: BindingAsk, at: { runtimeConfig: string; credentialsDir: string }, env: CliIo["env"]): { ok: true; value: BindingPlan } | { ok: false; message: string } {
  if (asked.kind !== "answer") return { ok: false, message: asked.kind === "refused" ? asked.message : "no binding" };
  const plan = planBinding(asked.body, at, env);
  if (!plan.ok) return { ok: false, message: `the binding is malformed (${plan.message})` };
  try {
    writePlan(plan.value);
  } catch (err) {
    return { ok: false, message: `the binding cannot be written (${(err as Error).message})` };
  }
  return plan;
}

/** Run `leviath bound-exec`. */
export async function runBoundExec(argv: string[], io: CliIo): Promise<number> {
  const flags = readFlags(argv, io);
  if (flags === undefined) {
    io.stdout(BOUND_EXEC_HELP);
    return EXIT.ok;
  }
  const { command } = flags;
  // Held: COMMAND is up before the binding, with nothing of any Run (the pod's environment only).
  const early = flags.held ? startCommand(command, io.env, io, true) : undefined;
  const asked = waitForBinding(flags.url, flags.tokenFile, flags.waitSeconds);
  const first = early === undefined ? await asked : await Promise.race([asked, early.exited.then((status) => ({ kind: "ended" as const, status }))]);
  if (first.kind === "ended") {
    io.stderr(`leviath bound-exec: ${command[0]} ended with status ${first.status} before its binding\n`);
    // At once: the ask still held must not take the Run's one hand-out for a runtime that is gone, nor keep the
    // container running while the pool counts it ready (the pod ends, and the pool replaces it).
    process.exit(first.status);
  }
  const applied = applyBinding(first, flags.at, io.env);
  if (!applied.ok) {
    const message = `${applied.message}; ${early === undefined ? "not starting" : "stopping"} ${command[0]}`;
    io.stderr(`leviath bound-exec: ${message}\n`);
    try {
      writeFileSync(flags.terminationLog, `leviath bound-exec: ${message}`.slice(0, 4000));
    } catch { /* no termination log outside a pod */ }
    if (early !== undefined) {
      // No binding: the pipe ends with nothing written, and the runtime goes.
      early.pipe?.end();
      early.child.kill("SIGKILL");
      await early.exited;
    }
    return EXIT.refused;
  }
  if (early === undefined) {
    io.stderr(`leviath bound-exec: bound to Run ${applied.value.run}; starting ${command[0]}\n`);
    return startCommand(command, applied.value.env, io, false).exited;
  }
  io.stderr(`leviath bound-exec: bound to Run ${applied.value.run}; handing it to ${command[0]}\n`);
  if (early.pipe !== undefined) await sendBinding(early.pipe, { run: applied.value.run, env: applied.value.added });
  return early.exited;
}
