// Events (events.k8s.io/v1), aggregated the way client-go's events recorder (k8s.io/client-go/tools/events)
// does it: the first occurrence is created; a repeat of the same event (same object, type, reason, action and
// note) is not a new object but a series on the first one, its count patched at once on the second occurrence
// and then at most once per flush interval; a series not seen for six minutes is finished and the next
// occurrence starts a new Event. Writes go out in the background and never fail a reconcile.
import { formatMicroTime } from "../api/time.ts";
import type { KubeClient } from "./client.ts";
import { isApiStatus } from "./errors.ts";

/** What one event says about its object. */
export interface EventNote {
  type: "Normal" | "Warning";
  /** CamelCase, at most 128 characters (the condition reason it reports). */
  reason: string;
  /** What the controller did or tried (`Validate`, `Reconcile`, `Create`). */
  action: string;
  /** Human-readable; cut to the API's 1 KiB limit. */
  note: string;
}

/** The object an event is about (`regarding`). */
export interface ObjectReference {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

/** Where reconcilers send events. */
export interface EventSink {
  record(regarding: ObjectReference, event: EventNote): void;
}

/** The running recorder. */
export interface EventRecorder extends EventSink {
  /** Write every pending series count now (also done every flush interval). */
  flush(): Promise<void>;
  /** Flush, then stop the timer. */
  stop(): Promise<void>;
}

/** One series as the recorder remembers it. */
export interface SeriesState {
  count: number;
  /** The count the server holds (1 until the series was first patched). */
  writtenCount: number;
  lastObservedMs: number;
  lastWriteMs: number;
}

/** client-go's finishTime: a series not observed this long is over. */
export const SERIES_EXPIRY_MS = 6 * 60_000;
/** How often a growing series' count is written at most (client-go refreshes every 30 minutes; a user looking sooner sees a stale count). */
export const SERIES_FLUSH_MS = 30_000;
/** Series remembered at most; the least recently seen go first. */
export const MAX_SERIES = 4096;
/** The API's limit on `note`, in bytes. */
const MAX_NOTE_BYTES = 1024;

/** The write one more occurrence of an event needs: a new Event, a patch of the series count, or none yet. */
export function decideEventWrite(entry: SeriesState | undefined, nowMs: number): "create" | "patch" | "count" {
  if (!entry || nowMs - entry.lastObservedMs > SERIES_EXPIRY_MS) return "create";
  if (entry.writtenCount === 1 || nowMs - entry.lastWriteMs >= SERIES_FLUSH_MS) return "patch";
  return "count";
}

function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let out = text.slice(0, max);
  while (Buffer.byteLength(out) > max - 3) out = out.slice(0, -1);
  return `${out}...`;
}

type Entry = SeriesState & {
  name: string;
  namespace: string;
  /** Writes of one series go out in order: a patch never overtakes the create it patches. */
  chain: Promise<void>;
  /** How to write the series again from scratch (its Event was deleted on the server). */
  recreate: () => Promise<void>;
  event: EventNote;
};

/** Options of {@link createEventRecorder}. */
export interface EventRecorderOptions {
  /** `reportingController`: the field manager name. */
  controller: string;
  /** `reportingInstance`: this process (its pod name). */
  instance: string;
  nowMs: () => number;
  /** Called for a write that failed (logged by the caller; the event is dropped). */
  onError: (err: unknown, event: EventNote) => void;
}

/** A recorder writing through `client`; namespaced events go to the object's namespace, others to `default` (as client-go). */
export function createEventRecorder(client: KubeClient, opts: EventRecorderOptions): EventRecorder {
  const series = new Map<string, Entry>();
  let sequence = 0;
  const path = (ns: string, name?: string) => `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/events${name ? `/${encodeURIComponent(name)}` : ""}`;

  function body(entry: Entry, regarding: ObjectReference, event: EventNote, nowMs: number) {
    return {
      apiVersion: "events.k8s.io/v1", kind: "Event",
      metadata: { name: entry.name, namespace: entry.namespace },
      eventTime: formatMicroTime(nowMs),
      reportingController: opts.controller, reportingInstance: opts.instance.slice(0, 128),
      action: event.action, reason: event.reason, type: event.type,
      note: truncateBytes(event.note, MAX_NOTE_BYTES),
      regarding,
    };
  }

  const seriesPatch = (entry: Entry) => ({ series: { count: entry.count, lastObservedTime: formatMicroTime(entry.lastObservedMs) } });

  function enqueue(entry: Entry, event: EventNote, write: () => Promise<void>): void {
    entry.chain = entry.chain.then(write).catch((err: unknown) => opts.onError(err, event));
  }

  function patch(entry: Entry): void {
    entry.lastWriteMs = opts.nowMs();
    enqueue(entry, entry.event, async () => {
      const count = entry.count;
      try {
        await client.request("PATCH", path(entry.namespace, entry.name), { body: seriesPatch(entry), contentType: "application/merge-patch+json" });
      } catch (err) {
        // Deleted meanwhile (events have a TTL on the server): the series is written again whole.
        if (!isApiStatus(err, 404)) throw err;
        await entry.recreate();
      }
      entry.writtenCount = Math.max(entry.writtenCount, count);
    });
  }

  const recorder: EventRecorder = {
    record(regarding, event) {
      const nowMs = opts.nowMs();
      const key = JSON.stringify([regarding.uid ?? "", regarding.kind, regarding.namespace ?? "", regarding.name, event.type, event.reason, event.action, event.note]);
      const known = series.get(key);
      const write = decideEventWrite(known, nowMs);
      if (write === "create" || !known) {
        const stamp = (BigInt(nowMs) * 1_000_000n + BigInt(sequence++ % 1_000_000)).toString(16);
        const entry: Entry = {
          name: `${regarding.name.slice(0, 200)}.${stamp}`, namespace: regarding.namespace ?? "default",
          count: 1, writtenCount: 1, lastObservedMs: nowMs, lastWriteMs: nowMs, chain: Promise.resolve(), event,
          recreate: () => client.request("POST", path(entry.namespace), { body: { ...body(entry, regarding, event, nowMs), ...seriesPatch(entry) } }).then(() => undefined),
        };
        series.delete(key);
        series.set(key, entry);
        if (series.size > MAX_SERIES) series.delete(series.keys().next().value!);
        enqueue(entry, event, async () => {
          await client.request("POST", path(entry.namespace), { body: body(entry, regarding, event, nowMs) });
        });
        return;
      }
      known.count += 1;
      known.lastObservedMs = nowMs;
      series.delete(key);
      series.set(key, known);
      if (write === "patch") patch(known);
    },
    async flush() {
      const nowMs = opts.nowMs();
      for (const [key, entry] of series) {
        if (entry.count > entry.writtenCount && entry.lastWriteMs < entry.lastObservedMs) patch(entry);
        else if (nowMs - entry.lastObservedMs > SERIES_EXPIRY_MS) series.delete(key);
      }
      await Promise.all([...series.values()].map((e) => e.chain));
    },
    async stop() {
      clearInterval(timer);
      await recorder.flush();
    },
  };
  const timer = setInterval(() => void recorder.flush(), SERIES_FLUSH_MS);
  timer.unref();
  return recorder;
}
