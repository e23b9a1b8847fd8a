// Cluster shell: the command is exec'd into the current stage's sandbox pod (the engine pod's agent container
// for a stage of kind `none`) as `timeout -s KILL <n> sh -c <command>`, so the timeout is enforced inside the
// sandbox even if the sidecar goes away; the sidecar also gives up a few seconds later. The exec runs marked
// (src/sandbox/process-sweep.ts) and, once it has ended, a sweep kills every process it left in the pod
// (pod-exec-sweep.ts) before the result is returned: a command that cannot be marked does not run, and one whose
// leftovers cannot be confirmed ended is an error. Output read from the API server is held to the seed's 8 MiB
// per frame and to the sidecar's 8 MiB of output in flight (shared by all running commands;
// `MAX_SHELL_OUTPUT_BYTES`), and the exec is dropped past them.
import { Writable } from "node:stream";
import type { PodExec } from "../../kube/pod-exec.ts";
import { buildBodyCapMessage, buildStreamFrameCapMessage, MAX_STREAM_FRAME_BYTES } from "../../policy/size-caps.ts";
import { buildMarkedCommand, isMarkFailure } from "../../sandbox/process-sweep.ts";
import { parseExecStatus } from "./exec-status.ts";
import { createPodSweeper, SlotPool, type PodSweeper } from "./pod-exec-sweep.ts";
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
  /** What ends a command's leftovers (default: {@link createPodSweeper} over `exec`). */
  readonly sweep?: PodSweeper;
  /** The slots of the commands running in the pods (default: its own); shared with a shell channel's (pod-channel-shell.ts). */
  readonly slots?: SlotPool;
  /** The output all running commands may hold together (default: its own 8 MiB); shared with a shell channel's. */
  readonly budget?: OutputBudget;
}

/** The command line exec'd into the sandbox. */
export function buildExecCommand(command: string, timeoutSeconds: number): string[] {
  return ["timeout", "-s", "KILL", String(timeoutSeconds), "sh", "-c", command];
}

/** The whole exec'd command line: {@link buildExecCommand} marked with `slot` and a deadline at the sidecar's own. */
export function buildMarkedExecCommand(command: string, timeoutSeconds: number, graceSeconds: number, slot: number): string[] {
  return buildMarkedCommand(slot, timeoutSeconds + graceSeconds + 1, buildExecCommand(command, timeoutSeconds));
}

/** Why a command that was neither capped nor timed out has no usable exit: the status's error, or no status at all. */
function explainMissingExit(status: ReturnType<typeof parseExecStatus> | undefined, peer: string): string | undefined {
  if (status === undefined) return `the exec stream from ${peer} closed without an exit status`;
  return "error" in status ? status.error : undefined;
}

/** A shell executor that runs commands with pods/exec. */
export function createPodExecShell(opts: PodExecShellOptions): ShellExecutor {
  const shared = opts.budget ?? new OutputBudget(MAX_SHELL_OUTPUT_BYTES);
  const grace = opts.graceSeconds ?? 5;
  const slots = opts.slots ?? new SlotPool();
  const sweep = opts.sweep ?? createPodSweeper({ exec: opts.exec, namespace: opts.namespace });
  return {
    label: "pod_exec",
    async run(req: ShellRequest): Promise<ShellResult> {
      const target = opts.target(req.stage);
      if ("error" in target) return failed(target.error);
      const slot = slots.take();
      if (slot === undefined) return failed("too many commands are running to mark another");
      try {
        const command = buildMarkedExecCommand(req.command, req.timeoutSeconds, grace, slot);
        const r = await execCommand({ exec: opts.exec, namespace: opts.namespace, target, command, req, shared, grace });
        if (isMarkFailure(r.exitCode, r.stderr)) return failed(`${r.stderr.trimEnd()} (pod/${target.pod}: the node's container runtime must leave its containers' audit login uid unset)`);
        // A command whose exec never opened left nothing; every other one is swept, timed out or not.
        if (r.error?.startsWith(EXEC_FAILED) === true) return r;
        const left = await sweep(target.pod, target.container, slot);
        return left === undefined ? r : { ...r, error: left };
      } finally {
        slots.release(slot);
      }
    },
  };
}

const EXEC_FAILED = "pods/exec into ";

const failed = (error: string): ShellResult => ({ exitCode: null, stdout: "", stderr: "", timedOut: false, error });

/** What one command's exec needs. */
interface ExecInput {
  readonly exec: PodExec;
  readonly namespace: string;
  readonly target: { readonly pod: string; readonly container: string };
  readonly command: string[];
  readonly req: ShellRequest;
  readonly shared: OutputBudget;
  readonly grace: number;
}

/** Runs one exec to its end (or the sidecar's backstop) under the output caps. */
async function execCommand({ exec, namespace, target, command, req, shared, grace }: ExecInput): Promise<ShellResult> {
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
    socket = await exec.exec(namespace, target.pod, target.container, command, sink(out), sink(err), null, false, (s) => {
      status = parseExecStatus(s);
    });
  } catch (e) {
    shared.release(total);
    return failed(`${EXEC_FAILED}${peer} failed: ${(e as Error).message ?? String(e)}`);
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
      const error = capped === undefined && !timedOut ? explainMissingExit(status, peer) : undefined;
      shared.release(total);
      resolve({ exitCode, stdout, stderr, timedOut, ...(capped ? { capped } : {}), ...(error === undefined ? {} : { error }) });
    });
  });
}
