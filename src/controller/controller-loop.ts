import { classifyError, type ErrorKind } from "../kube/errors.ts";
import { objectLogger, type Logger } from "../log/logger.ts";
import type { ControllerMetrics, ControllerName } from "../metrics/controller-metrics.ts";
import type { ReconcileResult } from "./cluster-port.ts";
import type { WorkQueue } from "./work-queue.ts";

/** Thrown by a write attempted while this process does not hold the lease. */
export class NotLeaderError extends Error {
  override readonly name = "NotLeaderError";
}

/** What a controller's workers need. */
export interface ControllerLoopDeps {
  name: ControllerName;
  queue: WorkQueue;
  reconcile: (key: string) => Promise<ReconcileResult>;
  workers: number;
  metrics: ControllerMetrics;
  log: Logger;
  newId: () => string;
  monotonicMs: () => number;
}

/** Running workers; `stop` waits for the reconciles in flight. */
export interface ControllerLoop {
  stop(): Promise<void>;
}

/** What JavaScript throws for a bug rather than a failed call: the closest thing to a Go panic. */
function isProgrammingError(err: unknown): boolean {
  return err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError || err instanceof SyntaxError;
}

const LOG_LEVEL_BY_KIND: Record<ErrorKind, "warn" | "error"> = { transient: "warn", forbidden: "error", invalid: "error", internal: "error" };

/**
 * Run `workers` loops pulling keys from the queue. A key is reconciled by one worker at a time; a requeue the
 * reconciler asked for resets its backoff; an error is classified once, counted under its kind and retried with
 * backoff unless retrying cannot help (`invalid`: the object must change first, and that change enqueues it).
 */
export function startControllerLoop(deps: ControllerLoopDeps): ControllerLoop {
  const { queue, metrics, name } = deps;
  async function processKey(key: string): Promise<void> {
    const log = objectLogger(deps.log, name, key, deps.newId());
    const started = deps.monotonicMs();
    metrics.activeWorkers(name, 1);
    try {
      const result = await deps.reconcile(key);
      const seconds = (deps.monotonicMs() - started) / 1000;
      queue.forget(key);
      if (result.requeueAfterMs !== undefined) {
        queue.addAfter(key, result.requeueAfterMs);
        metrics.reconciled(name, "requeue_after", seconds);
      } else metrics.reconciled(name, "success", seconds);
      log.debug({ durationMs: Math.round(seconds * 1000), requeueAfterMs: result.requeueAfterMs }, "reconciled");
    } catch (err) {
      const seconds = (deps.monotonicMs() - started) / 1000;
      if (err instanceof NotLeaderError) {
        log.warn("lost the lease: reconcile abandoned");
        return;
      }
      const kind = classifyError(err);
      metrics.reconciled(name, "error", seconds);
      // A retry cannot help an invalid object (controller-runtime's TerminalError); a TypeError and the like are bugs (its panics).
      metrics.reconcileError(name, kind, { terminal: kind === "invalid", panic: kind === "internal" && isProgrammingError(err) });
      log[LOG_LEVEL_BY_KIND[kind]]({ err, errorKind: kind }, "reconcile failed");
      if (kind !== "invalid") {
        metrics.queueRetry(name);
        queue.addRateLimited(key);
      }
    } finally {
      metrics.activeWorkers(name, -1);
      queue.done(key);
    }
  }
  const loops = Array.from({ length: deps.workers }, async () => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      await processKey(key);
    }
  });
  return {
    async stop() {
      queue.shutDown();
      await Promise.all(loops);
    },
  };
}
