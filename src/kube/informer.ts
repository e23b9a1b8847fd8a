import type { KubeClient } from "./client.ts";
import { isApiStatus } from "./errors.ts";
import type { KubeObject } from "./objects.ts";
import { createInformerCache, type InformerCache } from "./informer-cache.ts";
import { buildPath, type Resource } from "./resources.ts";

import type { InformerEvent } from "./informer-cache.ts";

export type { InformerEvent } from "./informer-cache.ts";

/** A read-only, indexed cache of one kind, kept current by list+watch. */
export interface Informer<T extends KubeObject = KubeObject> {
  readonly resource: Resource;
  /** True once the first list has been stored (and the watch opened). */
  readonly synced: boolean;
  get(namespace: string | undefined, name: string): T | undefined;
  list(namespace?: string): readonly T[];
  /** Objects whose controller owner reference has this uid. */
  listOwnedBy(uid: string): readonly T[];
  on(cb: (event: InformerEvent, obj: T) => void): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** How an informer reports trouble; restarts happen regardless. */
export interface InformerHooks {
  onError?: (resource: Resource, err: unknown, retryInMs: number) => void;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/**
 * Drops `metadata.managedFields` before an object is cached: no reconcile reads them, and for objects written
 * with server-side apply they are about as large as the object itself (controller-runtime's
 * TransformStripManagedFields does the same).
 */
export function stripManagedFields<T>(obj: T): T {
  const metadata = (obj as { metadata?: { managedFields?: unknown } } | undefined)?.metadata;
  if (metadata?.managedFields !== undefined) delete metadata.managedFields;
  return obj;
}

/** The annotation `kubectl apply` (client-side) keeps a whole copy of the object in. */
export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";

/**
 * Drops the `kubectl apply` annotation before an object is cached: no reconcile reads it, and it holds the object
 * as last applied, so an Agent or Run applied with kubectl would be cached twice over.
 */
export function stripLastApplied<T>(obj: T): T {
  const annotations = (obj as { metadata?: { annotations?: Record<string, string> } } | undefined)?.metadata?.annotations;
  if (annotations?.[LAST_APPLIED_ANNOTATION] !== undefined) delete annotations[LAST_APPLIED_ANNOTATION];
  return obj;
}

/** What to list and watch, and what of each object to keep. */
export interface InformerOptions<T extends KubeObject> extends InformerHooks {
  labelSelector?: string;
  fieldSelector?: string;
  namespace?: string;
  /**
   * What the cache keeps of each listed or watched object (after managedFields and the kubectl annotation are
   * dropped): the fields its readers use. It may change the object in place; it must keep the header and
   * `metadata.name`, `namespace` and `resourceVersion`. Default: all of it.
   */
  transform?: (obj: T) => T;
  /** Most objects one page of the list holds (default {@link LIST_PAGE_SIZE}); 0 lists everything in one response. */
  pageSize?: number;
}

/** One page of a list: its items, the resource version to watch from and the token of the next page. */
type ListResponse<T> = { metadata?: { resourceVersion?: string; continue?: string }; items: T[] };
/**
 * How many objects one page of a list holds (client-go's reflector asks for 500 too): 10,000 Runs in one response
 * were one ~30 MiB body, held whole as a buffer, a string and its parse at once; a page is at most a few hundred KB.
 */
export const LIST_PAGE_SIZE = 500;
/** How long the server keeps one watch open before it ends it and the informer opens the next (client-go: 5-10 min). */
const WATCH_TIMEOUT_SECONDS = 300;

/** What one informer's list and watch share: where to read, what to keep, the cache and the resource version reached. */
interface Feed<T extends KubeObject> {
  readonly client: KubeClient;
  readonly resource: Resource;
  readonly path: string;
  readonly selectors: { labelSelector: string | undefined; fieldSelector: string | undefined };
  readonly pageSize: number;
  readonly keep: (o: T) => T;
  readonly cache: InformerCache<T>;
  resourceVersion: string | undefined;
}

/**
 * An informer: list (in pages of {@link LIST_PAGE_SIZE}), then watch from the list's resource version, storing each object (without managedFields,
 * the kubectl annotation and whatever `transform` drops) and telling the listeners. A watch the server ends is
 * reopened from the last resource version; `410 Gone` lists again (the listeners see the difference as adds,
 * updates and deletes); any other failure (an API server restart, a refused connection) restarts it with capped
 * exponential backoff.
 */
export function createInformer<T extends KubeObject>(client: KubeClient, resource: Resource, opts: InformerOptions<T> = {}): Informer<T> {
  const transform = opts.transform ?? ((o: T) => o);
  const feed: Feed<T> = {
    client,
    resource,
    // One namespace for a client whose Role holds only that namespace (the sidecar); every namespace otherwise.
    path: buildPath(resource, opts.namespace),
    selectors: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector },
    pageSize: opts.pageSize ?? LIST_PAGE_SIZE,
    keep: (o: T) => transform(stripLastApplied(stripManagedFields(o))),
    cache: createInformerCache<T>(resource.namespaced),
    resourceVersion: undefined,
  };
  let synced = false;
  let stopped = false;
  let running = false;
  let backoff = MIN_BACKOFF_MS;
  let timer: NodeJS.Timeout | undefined;
  let abort = new AbortController();

  function fail(err: unknown): void {
    running = false;
    if (stopped) return;
    opts.onError?.(resource, err, backoff);
    clearTimeout(timer);
    timer = setTimeout(() => void run(), backoff);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }

  /** Watches until stopped or failed, reopening after each end of the server's and listing again after 410. */
  async function watchLoop(signal: AbortSignal): Promise<void> {
    while (!stopped && !signal.aborted) {
      if (!(await watchOnce(feed, signal))) await list(feed);
      backoff = MIN_BACKOFF_MS;
    }
  }

  async function run(): Promise<void> {
    if (stopped || running) return;
    running = true;
    abort = new AbortController();
    const signal = abort.signal;
    try {
      // After a failure, resume from the last resource version when there is one; the watch says 410 if it is too old.
      if (!synced || feed.resourceVersion === undefined) await list(feed);
    } catch (err) {
      fail(err);
      return;
    }
    synced = true;
    backoff = MIN_BACKOFF_MS;
    watchLoop(signal).then(() => (running = false), (err: unknown) => (signal.aborted ? (running = false) : fail(err)));
  }

  return {
    resource,
    get synced() {
      return synced;
    },
    get: (namespace, name) => feed.cache.get(namespace, name),
    list: (namespace) => feed.cache.list(namespace),
    listOwnedBy: (uid) => feed.cache.listOwnedBy(uid),
    on: (cb) => feed.cache.on(cb),
    start: run,
    stop() {
      stopped = true;
      clearTimeout(timer);
      abort.abort();
      return Promise.resolve();
    },
  };
}

/** One page of the list: the first (no token) or the one `token` names. */
function listPage<T extends KubeObject>(feed: Feed<T>, token: string | undefined): Promise<ListResponse<T>> {
  return feed.client.request<ListResponse<T>>("GET", feed.path, {
    query: { ...feed.selectors, ...(feed.pageSize > 0 ? { limit: feed.pageSize } : {}), ...(token ? { continue: token } : {}) }, timeoutMs: 120_000,
  });
}

/**
 * Lists page by page, storing each page's objects as it arrives, and turns the difference to the cache into
 * events. Every page is of the same snapshot (the continue token carries the first page's resource version), so
 * the watch resumes from the last page's version. A token the server no longer honours (410: its version was
 * compacted while the pages were read) lists again from the first page; what was stored stays (each object of the
 * new snapshot replaces it), and what the new snapshot lacks is deleted at its end.
 */
async function list<T extends KubeObject>(feed: Feed<T>): Promise<void> {
  const seen = new Set<string>();
  let token: string | undefined;
  let restarted = false;
  for (;;) {
    let res: ListResponse<T>;
    try {
      res = await listPage(feed, token);
    } catch (err) {
      if (token === undefined || restarted || !isApiStatus(err, 410)) throw err;
      restarted = true;
      token = undefined;
      // Only the new snapshot says what exists: an object of the first attempt's pages may be gone from it.
      seen.clear();
      continue;
    }
    storePage(feed, res.items, seen);
    token = res.metadata?.continue || undefined;
    if (token === undefined) {
      for (const [key, o] of feed.cache.entries()) if (!seen.has(key)) feed.cache.store("delete", o);
      feed.resourceVersion = res.metadata?.resourceVersion;
      return;
    }
  }
}

/** Stores one page's items, each an add or (when its version changed) an update, and notes their keys in `seen`. */
function storePage<T extends KubeObject>(feed: Feed<T>, items: readonly T[], seen: Set<string>): void {
  const apiVersion = feed.resource.group ? `${feed.resource.group}/${feed.resource.version}` : feed.resource.version;
  for (const item of items) {
    // List items come without apiVersion and kind (watch events carry them): stamp them, so every cached object has both.
    const o = feed.keep(Object.assign(item, { apiVersion, kind: feed.resource.kind }));
    const key = feed.cache.keyOf(o);
    seen.add(key);
    const before = feed.cache.lookup(key);
    if (!before) feed.cache.store("add", o);
    else if (before.metadata.resourceVersion !== o.metadata.resourceVersion) feed.cache.store("update", o);
  }
}

/** Watches from the feed's resource version until the server ends the watch; false when it answered 410 Gone. */
async function watchOnce<T extends KubeObject>(feed: Feed<T>, signal: AbortSignal): Promise<boolean> {
  let gone = false;
  let failure: Error | undefined;
  // The handler never throws into the client's stream: a failure is kept, the watch ended, and it is thrown here.
  const own = new AbortController();
  const end = () => own.abort();
  signal.addEventListener("abort", end, { once: true });
  try {
    await feed.client.watch(feed.path, { ...feed.selectors, resourceVersion: feed.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: WATCH_TIMEOUT_SECONDS }, (type, object) => {
      if (own.signal.aborted) return;
      if (type !== "ERROR") return applyWatchEvent(feed, type, object as T);
      const status = object as { code?: number; message?: string } | undefined;
      if (status?.code === 410) gone = true;
      else failure = new Error(`watch of ${feed.path}: ${status?.message ?? JSON.stringify(object)}`);
      own.abort();
    }, own.signal);
  } catch (err) {
    // A resource version too old may also be refused outright, before the stream starts.
    if (isApiStatus(err, 410)) return false;
    if (!own.signal.aborted || signal.aborted) throw err;
  } finally {
    signal.removeEventListener("abort", end);
  }
  if (failure) throw failure;
  return !gone;
}

/** One watch event other than ERROR: note its resource version and, unless it is a bookmark, store its object. */
function applyWatchEvent<T extends KubeObject>(feed: Feed<T>, type: string, object: T): void {
  const version = object.metadata?.resourceVersion;
  if (version) feed.resourceVersion = version;
  if (type === "BOOKMARK") return;
  const o = feed.keep(object);
  if (type === "ADDED") feed.cache.store(feed.cache.lookup(feed.cache.keyOf(o)) !== undefined ? "update" : "add", o);
  else if (type === "MODIFIED") feed.cache.store("update", o);
  else if (type === "DELETED") feed.cache.store("delete", o);
}
