// What `leviath adapter` does with a launch: writes its files (0600, under HOME only) and runs its program with
// exactly its environment, in the workspace, forwarding the signals the kubelet sends, and collects its output.
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, openSync, closeSync, readSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import type { Launch } from "../runtime/adapters/launch.ts";

/** Most bytes of the program's stdout kept (its final answer is at most 256 KiB; the rest is not read). */
const MAX_STDOUT = 16 * 1024 * 1024;
/** Most bytes of the launch's answer file read (a final answer is at most 256 KiB: a longer one is refused later). */
const MAX_ANSWER_FILE = 1024 * 1024;
/** The end of its stderr kept for the termination message. */
const STDERR_TAIL = 2000;
/** The signals passed on to the program: a cancellation or a deadline is SIGTERM from the kubelet. */
const FORWARDED: readonly NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];

/** Writes the launch's files; refuses (fails closed, writing nothing more) a path outside `home`. */
export function writeLaunchFiles(launch: Launch, home: string): { ok: true } | { ok: false; message: string } {
  for (const file of launch.files) {
    const path = resolve(home, file.path);
    const rel = relative(resolve(home), path);
    if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return { ok: false, message: `the adapter's file ${file.path} is not under HOME (${home})` };
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(path, file.content, { mode: file.mode ?? 0o600 });
      // writeFile's mode holds only for a new file: a file already there gets it too.
      chmodSync(path, file.mode ?? 0o600);
    } catch (err) {
      return { ok: false, message: `writing ${path}: ${(err as Error).message}` };
    }
  }
  return { ok: true };
}

/** How the program ended. */
export interface ProgramExit {
  /** Its exit code, or 128 + the signal's number when a signal ended it. */
  readonly code: number;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  /** The end of what it printed on stderr (all of which went on to this process's stderr). */
  readonly stderrTail: string;
  /** The signal passed on to it, if one was (the kubelet's SIGTERM: a cancellation or the Run's deadline). */
  readonly forwarded?: NodeJS.Signals;
  /** What it wrote to the launch's answer file, when the launch names one and the file can be read. */
  readonly answerFile?: string;
  /** Set when it could not be started at all (ENOENT: not on the PATH). */
  readonly spawnError?: NodeJS.ErrnoException;
}

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** Runs the launch's program in `cwd` with exactly its environment; stderr goes on to `stderr` as it comes. */
export function runLaunch(launch: Launch, cwd: string, stderr: (text: string) => void): Promise<ProgramExit> {
  const child = spawn(launch.command, [...launch.args], { cwd, env: { ...launch.env }, stdio: ["pipe", "pipe", "pipe"] });
  let forwarded: NodeJS.Signals | undefined;
  const forward = (signal: NodeJS.Signals) => {
    forwarded ??= signal;
    child.kill(signal);
  };
  for (const s of FORWARDED) process.on(s, forward);
  const out: Buffer[] = [];
  let outBytes = 0;
  let errTail = "";
  child.stdout.on("data", (d: Buffer) => {
    if (outBytes < MAX_STDOUT) out.push(d.subarray(0, MAX_STDOUT - outBytes));
    outBytes += d.length;
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr(d.toString());
    errTail = (errTail + d.toString()).slice(-STDERR_TAIL);
  });
  child.stdin.on("error", () => undefined);
  child.stdin.end(launch.stdin ?? "");
  return new Promise((resolvePromise) => {
    const done = (result: Omit<ProgramExit, "stdout" | "stderrTail" | "forwarded">) => {
      for (const s of FORWARDED) process.off(s, forward);
      const answerFile = launch.answerFile === undefined ? undefined : readAnswerFile(launch.answerFile, cwd);
      resolvePromise({ ...result, stdout: Buffer.concat(out).toString("utf8"), stderrTail: errTail, ...(forwarded ? { forwarded } : {}), ...(answerFile === undefined ? {} : { answerFile }) });
    };
    child.once("error", (err: NodeJS.ErrnoException) => done({ code: 127, signal: null, spawnError: err }));
    child.once("close", (code, signal) => done({ code: code ?? 128 + (SIGNAL_NUMBERS[signal ?? "SIGKILL"] ?? 9), signal }));
  });
}

/** The start of the answer file (at most MAX_ANSWER_FILE bytes), or undefined when it cannot be read. */
function readAnswerFile(path: string, cwd: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(resolve(cwd, path), "r");
    const buf = Buffer.alloc(MAX_ANSWER_FILE);
    const n = readSync(fd, buf, 0, MAX_ANSWER_FILE, 0);
    return buf.subarray(0, n).toString("utf8");
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
