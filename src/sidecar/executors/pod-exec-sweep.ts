// The end of a command in a pod (src/sandbox/process-sweep.ts): each running command holds a slot its marker
// carries, and once its exec has ended the sidecar execs a sweep naming that slot, which kills whatever the
// command left (setsid, double-forked, nohup'd, or its own first process held past the timeout), and any process
// of an earlier command that is no longer live. Other running commands' processes carry live markers of other
// slots and are left alone. A sweep that fails (a leftover of the command may kill it as it starts) is tried
// again for a few seconds, which outlasts the command's deadline and PID 1's backstop sweep of a sandbox pod.
import { Writable } from "node:stream";
import type { PodExec } from "../../kube/pod-exec.ts";
import { buildSweepCommand, MARKER, SWEEP_UNFINISHED_EXIT } from "../../sandbox/process-sweep.ts";
import { parseExecStatus } from "./exec-status.ts";

/** The slots of the commands running now: the smallest free one is handed out. */
export class SlotPool {
  readonly #used = new Set<number>();

  /** A free slot, or undefined when every slot is taken (more commands than the sidecar ever runs at once). */
  take(): number | undefined {
    for (let slot = 0; slot < MARKER.slots; slot++) {
      if (!this.#used.has(slot)) {
        this.#used.add(slot);
        return slot;
      }
    }
    return undefined;
  }

  release(slot: number): void {
    this.#used.delete(slot);
  }
}

/** Options of {@link createPodSweeper}. */
export interface PodSweeperOptions {
  readonly exec: PodExec;
  readonly namespace: string;
  /** The waits before each try after the first (default 0.25, 0.5, 1, 2 and 4 s). */
  readonly retryMs?: readonly number[];
  /** How long one sweep may take before it counts as failed (default 10 s). */
  readonly attemptMs?: number;
}

/** Sweeps a slot in a pod's container; resolves to undefined once nothing of it runs, else to why not. */
export type PodSweeper = (pod: string, container: string, slot: number) => Promise<string | undefined>;

const DEFAULT_RETRY_MS = [250, 500, 1000, 2000, 4000];

/** A sweeper that execs {@link buildSweepCommand} into the pod until one run of it succeeds. */
export function createPodSweeper(opts: PodSweeperOptions): PodSweeper {
  const waits = [0, ...(opts.retryMs ?? DEFAULT_RETRY_MS)];
  const attemptMs = opts.attemptMs ?? 10_000;
  return async (pod, container, slot) => {
    let why = "";
    for (const wait of waits) {
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      why = await sweepOnce(opts, { pod, container, slot, attemptMs });
      if (why === "") return undefined;
    }
    return `the processes the command left in pod/${pod} could not be ended: ${why}`;
  };
}

/** A sink for the sweep's output, of which there is none worth reading (the API server wants one stream at least). */
const discard = () => new Writable({ write: (_chunk, _enc, done) => done() });

/** Where one sweep runs: the command's pod, container and slot, and how long the attempt may take. */
interface SweepTarget {
  readonly pod: string;
  readonly container: string;
  readonly slot: number;
  readonly attemptMs: number;
}

/** One sweep: "" when it finished, else what went wrong. */
async function sweepOnce(opts: PodSweeperOptions, target: SweepTarget): Promise<string> {
  const { pod, container, slot, attemptMs } = target;
  let status: { exitCode: number } | { error: string } | undefined;
  let socket: Awaited<ReturnType<PodExec["exec"]>>;
  try {
    socket = await opts.exec.exec(opts.namespace, pod, container, buildSweepCommand([slot]), discard(), discard(), null, false, (s) => {
      status = parseExecStatus(s);
    });
  } catch (e) {
    return `pods/exec failed: ${(e as Error).message ?? String(e)}`;
  }
  const timedOut = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      resolve(true);
      socket.close();
    }, attemptMs);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (timedOut) return `the sweep did not end within ${attemptMs / 1000} s`;
  if (status === undefined) return "the sweep's exec stream closed without an exit status";
  if ("error" in status) return status.error;
  if (status.exitCode === SWEEP_UNFINISHED_EXIT) return "processes were still being started after 100 passes";
  return status.exitCode === 0 ? "" : `the sweep exited with ${status.exitCode}`;
}
