// Cluster shell: the command is exec'd into the current stage's sandbox pod (the engine pod's agent container
// for a stage of kind `none`) as `timeout -s KILL <n> sh -c <command>`, so the timeout is enforced inside the
// sandbox even if the sidecar goes away; the sidecar also gives up a few seconds later. Output read from the
// API server is held to the seed's 8 MiB per frame and to the sidecar's 8 MiB of output in flight (shared by all
// running commands; `MAX_SHELL_OUTPUT_BYTES`), and the exec is dropped past them.
import { Writable } from "node:stream";
import type { V1Status } from "@kubernetes/client-node";
import type { PodExec } from "../../kube/pod-exec.ts";
import { buildBodyCapMessage, buildStreamFrameCapMessage, MAX_STREAM_FRAME_BYTES } from "../../policy/size-caps.ts";
import { MAX_SHELL_OUTPUT_BYTES, OutputBudget, type RunStage, type ShellExecutor, type ShellRequest, type ShellResult } from "./shell.ts";

/** Where a stage's commands run. */
export type PodTarget = { readonly pod: string; readonly container: string } | { readonly error: string };

/** Options of the pods/exec executor. */
export interface PodExecShellOptions {
  readonly exec: PodExec;
  readonly namespace: string;
  readonly target: (stage: RunStage) => PodTarget;
  /** How long after the in-sandbox timeout the sidecar stops waiting (default 5 s). */
  readonly graceSeconds?: number;
}

/** The command line exec'd into the sandbox. */
export function buildExecCommand(command: string, timeoutSeconds: number): string[] {
  return ["timeout", "-s", "KILL", String(timeoutSeconds), "sh", "-c", command];
}

/** The exit code in an exec's final status: 0 on Success, the `ExitCode` cause otherwise; else an error text. */
export function parseExecStatus(status: V1Status): { exitCode: number } | { error: string } {
  if (status.status === "Success") return { exitCode: 0 };
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  const code = cause?.message === undefined ? NaN : Number(cause.message);
  if (Number.isInteger(code)) return { exitCode: code };
  return { error: status.message ?? status.reason ?? "exec failed" };
}

/** A shell executor that runs commands with pods/exec. */
export function createPodExecShell(opts: PodExecShellOptions): ShellExecutor {
  const shared = new OutputBudget(MAX_SHELL_OUTPUT_BYTES);
  const grace = opts.graceSeconds ?? 5;
  return {
    label: "pod_exec",
    async run(req: ShellRequest): Promise<ShellResult> {
      const target = opts.target(req.stage);
      if ("error" in target) return { exitCode: null, stdout: "", stderr: "", timedOut: false, error: target.error };
      const peer = `pod/${target.pod}`;
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let total = 0;
      let capped: string | undefined;
      let drop: () => void = () => {};
      const sink = (into: Buffer[]) => new Writable({
        write(chunk: Buffer, _enc, done) {
          if (capped === undefined) {
            if (chunk.length > MAX_STREAM_FRAME_BYTES) capped = buildStreamFrameCapMessage(peer);
            else if (!shared.take(chunk.length)) capped = buildBodyCapMessage(peer, shared.cap);
            if (capped !== undefined) drop();
            else {
              total += chunk.length;
              into.push(chunk);
            }
          }
          done();
        },
      });
      let status: { exitCode: number } | { error: string } | undefined;
      const started = Date.now();
      let socket: Awaited<ReturnType<PodExec["exec"]>>;
      try {
        socket = await opts.exec.exec(opts.namespace, target.pod, target.container, buildExecCommand(req.command, req.timeoutSeconds), sink(out), sink(err), null, false, (s) => {
          status = parseExecStatus(s);
        });
      } catch (e) {
        shared.release(total);
        return { exitCode: null, stdout: "", stderr: "", timedOut: false, error: `pods/exec into ${peer} failed: ${(e as Error).message ?? String(e)}` };
      }
      let gaveUp = false;
      return new Promise<ShellResult>((resolve) => {
        const timer = setTimeout(() => {
          gaveUp = true;
          socket.close();
        }, (req.timeoutSeconds + grace) * 1000);
        drop = () => socket.close();
        socket.on("close", () => {
          clearTimeout(timer);
          const stdout = Buffer.concat(out).toString("utf8");
          const stderr = Buffer.concat(err).toString("utf8");
          const exitCode = status !== undefined && "exitCode" in status ? status.exitCode : null;
          // `timeout -s KILL` exits 137 when it had to kill the command.
          const timedOut = gaveUp || (exitCode === 137 && Date.now() - started >= req.timeoutSeconds * 1000);
          const error = capped === undefined && !timedOut && status !== undefined && "error" in status ? status.error : undefined;
          const lost = status === undefined && capped === undefined && !timedOut ? `the exec stream from ${peer} closed without an exit status` : undefined;
          shared.release(total);
          resolve({ exitCode, stdout, stderr, timedOut, ...(capped ? { capped } : {}), ...(error ?? lost ? { error: (error ?? lost)! } : {}) });
        });
      });
    },
  };
}
