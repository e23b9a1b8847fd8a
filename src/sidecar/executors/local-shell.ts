// Standalone shell: `timeout -s KILL <n>` running the command confined (local-confinement.ts: its own PID and
// mount namespaces, read-only root, the sidecar's files hidden) in the workdir, with a minimal environment
// (never the sidecar's own). The command is killed at the timeout by `timeout` itself (so also when the sidecar
// dies), and by the sidecar, as a group, a little later or when its output passes the 64 MiB buffered-body cap;
// either way its PID namespace ends, and every process it left with it.
import { spawn } from "node:child_process";
import { buildBodyCapMessage } from "../../policy/size-caps.ts";
import { buildConfinedArgv, isRootProcess, type Confinement } from "./local-confinement.ts";
import { MAX_SHELL_OUTPUT_BYTES, OutputBudget, type ShellExecutor, type ShellRequest, type ShellResult } from "./shell.ts";

/** The peer named in a cap message for a local command. */
export const LOCAL_SHELL_PEER = "the local shell";

/** How long after the timeout the sidecar kills the group itself, should `timeout` not have. */
const BACKSTOP_SECONDS = 2;

/** Options of the local executor. */
export interface LocalShellOptions {
  readonly workdir: string;
  /** The command's whole environment. */
  readonly env: Readonly<Record<string, string>>;
  readonly maxOutputBytes?: number;
  /** How commands are confined (there is no unconfined mode). */
  readonly confinement: Confinement;
}

/** A shell executor running commands as local processes. */
export function createLocalShell(opts: LocalShellOptions): ShellExecutor {
  const cap = opts.maxOutputBytes ?? MAX_SHELL_OUTPUT_BYTES;
  const shared = new OutputBudget(cap);
  return {
    label: "local",
    run: (req: ShellRequest) =>
      new Promise<ShellResult>((resolve) => {
        const started = Date.now();
        const argv = ["-s", "KILL", String(req.timeoutSeconds), ...buildConfinedArgv(opts.confinement, req.command, isRootProcess())];
        const child = spawn("timeout", argv, { cwd: opts.workdir, env: { ...opts.env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        let total = 0;
        let timedOut = false;
        let capped: string | undefined;
        let failed: string | undefined;
        const killGroup = () => {
          try {
            if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
          } catch {
            // Already gone.
          }
        };
        const take = (into: Buffer[]) => (chunk: Buffer) => {
          if (capped !== undefined) return;
          if (total + chunk.length > cap || !shared.take(chunk.length)) {
            capped = buildBodyCapMessage(LOCAL_SHELL_PEER, cap);
            killGroup();
            // Read no more: what is still in the pipes would be allocated as chunks only to be dropped, up to
            // tens of MiB of garbage per command before V8 next collects (docs/benchmarks-history.md, `sidecar-memory`).
            child.stdout.destroy();
            child.stderr.destroy();
            return;
          }
          total += chunk.length;
          into.push(chunk);
        };
        child.stdout.on("data", take(out));
        child.stderr.on("data", take(err));
        const timer = setTimeout(() => {
          timedOut = true;
          killGroup();
        }, (req.timeoutSeconds + BACKSTOP_SECONDS) * 1000);
        child.on("error", (e) => {
          failed = `failed to start the shell: ${e.message}`;
        });
        child.on("close", (code, signal) => {
          clearTimeout(timer);
          shared.release(total);
          // `timeout -s KILL` kills its whole group, itself included, at the timeout.
          const killed = code === 137 || signal === "SIGKILL";
          if (killed && capped === undefined && Date.now() - started >= req.timeoutSeconds * 1000) timedOut = true;
          resolve({
            exitCode: code,
            stdout: Buffer.concat(out).toString("utf8"),
            stderr: Buffer.concat(err).toString("utf8"),
            timedOut,
            ...(capped !== undefined ? { capped } : {}),
            ...(failed !== undefined ? { error: failed } : {}),
          });
        });
      }),
  };
}
