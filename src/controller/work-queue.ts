/** A deduplicating work queue of object keys, as client-go's: a key is never processed twice at once. */
export interface WorkQueue {
  /** Queue a key now; a key already waiting is not added twice, a key being processed is re-run after. */
  add(key: string): void;
  /** Queue a key after a delay (a requeue the reconciler asked for). */
  addAfter(key: string, delayMs: number): void;
  /** Queue a key after its per-key exponential backoff, and grow the backoff. */
  addRateLimited(key: string): void;
  /** Reset a key's backoff after a success. */
  forget(key: string): void;
  /** The next key to process (marked in flight), or undefined once shut down. */
  get(): Promise<string | undefined>;
  /** Finish processing a key (re-queues it if it was added meanwhile). */
  done(key: string): void;
  /** Keys waiting (not in flight, not delayed). */
  len(): number;
  /** When each key in flight was taken (monotonic ms), for unfinished work and the longest running processor. */
  inFlightStartedMs(): number[];
  shutDown(): void;
}

/** Backoff of a failing key: base, doubling per failure, capped. */
export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

/** How long keys wait and are worked on, as client-go's workqueue metrics measure it. */
export interface QueueTiming {
  /** A monotonic clock in milliseconds. */
  nowMs(): number;
  /** A key was taken by a worker after waiting this long since it was queued. */
  waited(seconds: number): void;
  /** A worker finished a key it held this long. */
  worked(seconds: number): void;
}

/** Create a work queue; `onChange` sees the depth after every change (for `workqueue_depth`). */
export function createWorkQueue(opts: BackoffOptions = { baseDelayMs: 200, maxDelayMs: 120_000 }, onChange?: (depth: number, added: boolean) => void, timing?: QueueTiming): WorkQueue {
  const queue: string[] = [];
  const dirty = new Set<string>();
  const processing = new Set<string>();
  const queuedAt = new Map<string, number>();
  const startedAt = new Map<string, number>();
  const failures = new Map<string, number>();
  const waiters: ((key: string | undefined) => void)[] = [];
  let closed = false;

  function take(key: string): void {
    dirty.delete(key);
    processing.add(key);
    if (!timing) return;
    const now = timing.nowMs();
    timing.waited(Math.max(0, now - (queuedAt.get(key) ?? now)) / 1000);
    queuedAt.delete(key);
    startedAt.set(key, now);
  }

  function push(key: string): void {
    if (timing) queuedAt.set(key, timing.nowMs());
    const waiter = waiters.shift();
    if (waiter) {
      take(key);
      waiter(key);
    } else queue.push(key);
  }

  function add(key: string): void {
    if (closed || dirty.has(key)) return;
    dirty.add(key);
    if (!processing.has(key)) push(key);
    onChange?.(queue.length, true);
  }

  const delayed = createDelayedAdds(add);
  function addAfter(key: string, delayMs: number): void {
    if (closed) return;
    if (delayMs <= 0) return add(key);
    delayed.addAfter(key, delayMs);
  }

  return {
    add,
    addAfter,
    addRateLimited(key) {
      const n = failures.get(key) ?? 0;
      failures.set(key, n + 1);
      addAfter(key, Math.min(opts.baseDelayMs * 2 ** n, opts.maxDelayMs));
    },
    forget: (key) => void failures.delete(key),
    get() {
      if (closed) return Promise.resolve(undefined);
      const key = queue.shift();
      if (key !== undefined) {
        take(key);
        onChange?.(queue.length, false);
        return Promise.resolve(key);
      }
      return new Promise((resolve) => waiters.push(resolve));
    },
    done(key) {
      processing.delete(key);
      const started = startedAt.get(key);
      if (timing && started !== undefined) timing.worked(Math.max(0, timing.nowMs() - started) / 1000);
      startedAt.delete(key);
      if (dirty.has(key)) {
        dirty.delete(key);
        add(key);
      }
    },
    len: () => queue.length,
    inFlightStartedMs: () => [...startedAt.values()],
    shutDown() {
      closed = true;
      delayed.clear();
      for (const w of waiters.splice(0)) w(undefined);
    },
  };
}

/** Adds after a delay, one timer per key: the earliest requested time wins; a later request never postpones an earlier one. */
function createDelayedAdds(add: (key: string) => void): { addAfter(key: string, delayMs: number): void; clear(): void } {
  const timers = new Map<string, { timer: NodeJS.Timeout; due: number }>();
  return {
    addAfter(key, delayMs) {
      const due = performance.now() + delayMs;
      const pending = timers.get(key);
      if (pending && pending.due <= due) return;
      if (pending) clearTimeout(pending.timer);
      const timer = setTimeout(() => {
        timers.delete(key);
        add(key);
      }, delayMs);
      timers.set(key, { timer, due });
    },
    clear() {
      for (const t of timers.values()) clearTimeout(t.timer);
      timers.clear();
    },
  };
}
