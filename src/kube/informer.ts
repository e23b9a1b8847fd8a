import type { KubeClient } from "./client.ts";
import { isApiStatus } from "./errors.ts";
import type { KubeObject } from "./objects.ts";
import { buildPath, type Resource } from "./resources.ts";

/** What an informer tells its listeners. */
export type InformerEvent = "add" | "update" | "delete";

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

function controllerUid(obj: KubeObject): string | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller)?.uid;
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

/**
 * An informer: list (in pages of {@link LIST_PAGE_SIZE}), then watch from the list's resource version, storing each object (without managedFields,
 * the kubectl annotation and whatever `transform` drops) and telling the listeners. A watch the server ends is
 * reopened from the last resource version; `410 Gone` lists again (the listeners see the difference as adds,
 * updates and deletes); any other failure (an API server restart, a refused connection) restarts it with capped
 * exponential backoff.
 */
export function createInformer<T extends KubeObject>(client: KubeClient, resource: Resource, opts: InformerOptions<T> = {}): Informer<T> {
  // One namespace for a client whose Role holds only that namespace (the sidecar); every namespace otherwise.
  const path = buildPath(resource, opts.namespace);
  const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
  const selectors = { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };
  const transform = opts.transform ?? ((o: T) => o);
  const pageSize = opts.pageSize ?? LIST_PAGE_SIZE;
  const keep = (o: T) => transform(stripLastApplied(stripManagedFields(o)));
  const objects = new Map<string, T>();
  const byNamespace = new Map<string, Map<string, T>>();
  const owned = new Map<string, Map<string, T>>();
  const ownerOf = new Map<string, string>();
  const listeners: ((event: InformerEvent, obj: T) => void)[] = [];
  let synced = false;
  let stopped = false;
  let running = false;
  let resourceVersion: string | undefined;
  let backoff = MIN_BACKOFF_MS;
  let timer: NodeJS.Timeout | undefined;
  let abort = new AbortController();

  const keyOf = (namespace: string | undefined, name: string) => `${resource.namespaced ? namespace ?? "" : ""}/${name}`;
  const keyOfObj = (o: T) => keyOf(o.metadata.namespace, o.metadata.name);
  const unindex = (key: string) => {
    const uid = ownerOf.get(key);
    if (uid !== undefined) owned.get(uid)?.delete(key);
    if (uid !== undefined && owned.get(uid)?.size === 0) owned.delete(uid);
    ownerOf.delete(key);
  };
  const index = (key: string, o: T) => {
    unindex(key);
    const uid = controllerUid(o);
    if (uid === undefined) return;
    ownerOf.set(key, uid);
    if (!owned.has(uid)) owned.set(uid, new Map());
    owned.get(uid)!.set(key, o);
  };
  const store = (event: InformerEvent, o: T) => {
    const key = keyOfObj(o);
    const ns = o.metadata.namespace ?? "";
    if (event === "delete") {
      objects.delete(key);
      byNamespace.get(ns)?.delete(key);
      if (byNamespace.get(ns)?.size === 0) byNamespace.delete(ns);
      unindex(key);
    } else {
      objects.set(key, o);
      if (!byNamespace.has(ns)) byNamespace.set(ns, new Map());
      byNamespace.get(ns)!.set(key, o);
      index(key, o);
    }
    for (const l of listeners) l(event, o);
  };

  /** One page of the list: the first (no token) or the one `token` names. */
  const listPage = (token: string | undefined) => client.request<ListResponse<T>>("GET", path, {
    query: { ...selectors, ...(pageSize > 0 ? { limit: pageSize } : {}), ...(token ? { continue: token } : {}) }, timeoutMs: 120_000,
  });

  /**
   * Lists page by page, storing each page's objects as it arrives, and turns the difference to the cache into
   * events. Every page is of the same snapshot (the continue token carries the first page's resource version), so
   * the watch resumes from the last page's version. A token the server no longer honours (410: its version was
   * compacted while the pages were read) lists again from the first page; what was stored stays (each object of the
   * new snapshot replaces it), and what the new snapshot lacks is deleted at its end.
   */
  async function list(): Promise<void> {
    const seen = new Set<string>();
    let token: string | undefined;
    let restarted = false;
    for (;;) {
      let res: ListResponse<T>;
      try {
        res = await listPage(token);
      } catch (err) {
        if (token === undefined || restarted || !isApiStatus(err, 410)) throw err;
        restarted = true;
        token = undefined;
        // Only the new snapshot says what exists: an object of the first attempt's pages may be gone from it.
        seen.clear();
        continue;
      }
      for (const item of res.items) {
        // List items come without apiVersion and kind (watch events carry them): stamp them, so every cached object has both.
        const o = keep(Object.assign(item, { apiVersion, kind: resource.kind }));
        const key = keyOfObj(o);
        seen.add(key);
        const before = objects.get(key);
        if (!before) store("add", o);
        else if (before.metadata.resourceVersion !== o.metadata.resourceVersion) store("update", o);
      }
      token = res.metadata?.continue || undefined;
      if (token === undefined) {
        for (const [key, o] of [...objects]) if (!seen.has(key)) store("delete", o);
        resourceVersion = res.metadata?.resourceVersion;
        return;
      }
    }
  }

  /** Watches from `resourceVersion` until the server ends the watch; false when it answered 410 Gone. */
  async function watchOnce(signal: AbortSignal): Promise<boolean> {
    let gone = false;
    let failure: Error | undefined;
    // The handler never throws into the client's stream: a failure is kept, the watch ended, and it is thrown here.
    const own = new AbortController();
    const end = () => own.abort();
    signal.addEventListener("abort", end, { once: true });
    try {
      await client.watch(path, { ...selectors, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: WATCH_TIMEOUT_SECONDS }, (type, object) => {
        if (own.signal.aborted) return;
        if (type === "ERROR") {
          const status = object as { code?: number; message?: string } | undefined;
          if (status?.code === 410) gone = true;
          else failure = new Error(`watch of ${path}: ${status?.message ?? JSON.stringify(object)}`);
          own.abort();
          return;
        }
        const version = (object as T).metadata?.resourceVersion;
        if (version) resourceVersion = version;
        if (type === "BOOKMARK") return;
        const o = keep(object as T);
        if (type === "ADDED") store(objects.has(keyOfObj(o)) ? "update" : "add", o);
        else if (type === "MODIFIED") store("update", o);
        else if (type === "DELETED") store("delete", o);
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
      if (!(await watchOnce(signal))) await list();
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
      if (!synced || resourceVersion === undefined) await list();
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
    get: (namespace, name) => objects.get(keyOf(namespace, name)),
    list: (namespace) => [...(namespace === undefined ? objects : byNamespace.get(namespace) ?? []).values()],
    listOwnedBy: (uid) => [...(owned.get(uid)?.values() ?? [])],
    on: (cb) => void listeners.push(cb),
    start: run,
    stop() {
      stopped = true;
      clearTimeout(timer);
      abort.abort();
      return Promise.resolve();
    },
  };
}
