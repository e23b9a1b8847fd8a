import { ListWatch, Watch, type KubernetesListObject, type KubernetesObject } from "@kubernetes/client-node";
import type { KubeClient } from "./client.ts";
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

/** A Watch whose events reach the cache without managedFields. */
class StrippingWatch extends Watch {
  override watch(...[path, query, callback, done]: Parameters<Watch["watch"]>): ReturnType<Watch["watch"]> {
    return super.watch(path, query, (phase, apiObj, watchObj) => callback(phase, phase === "ERROR" ? apiObj : stripManagedFields(apiObj), watchObj), done);
  }
}

function controllerUid(obj: KubeObject): string | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller)?.uid;
}

/**
 * An informer over client-node's ListWatch. ListWatch re-lists by itself after `410 Gone` and reconnects after
 * watch timeouts, but stops for good on any other error (an API server restart, a refused connection): this
 * wrapper restarts it with capped exponential backoff, resuming from the last resource version.
 */
export function createInformer<T extends KubeObject>(client: KubeClient, resource: Resource, opts: { labelSelector?: string; fieldSelector?: string; namespace?: string } & InformerHooks = {}): Informer<T> {
  // One namespace for a client whose Role holds only that namespace (the sidecar); every namespace otherwise.
  const path = buildPath(resource, opts.namespace);
  const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
  // List items come without apiVersion and kind (watch events carry them): stamp them, so every cached object has both.
  // The library types timestamps as Date; our objects hold what the wire holds (strings): the intersection satisfies it.
  const listFn = async () => {
    const list = await client.request<KubernetesListObject<T & KubernetesObject>>("GET", path, { query: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector }, timeoutMs: 120_000 });
    for (const item of list.items) stripManagedFields(Object.assign(item, { apiVersion, kind: resource.kind }));
    return list;
  };
  const lw = new ListWatch<T & KubernetesObject>(path, new StrippingWatch(client.config), listFn, false, opts.labelSelector, opts.fieldSelector);
  const owned = new Map<string, Map<string, T>>();
  const ownerOf = new Map<string, string>();
  const listeners: ((event: InformerEvent, obj: T) => void)[] = [];
  let synced = false;
  let stopped = false;
  let failed = false;
  let backoff = MIN_BACKOFF_MS;
  let timer: NodeJS.Timeout | undefined;

  const keyOf = (o: T) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  const unindex = (o: T) => {
    const key = keyOf(o);
    const uid = ownerOf.get(key);
    if (uid !== undefined) owned.get(uid)?.delete(key);
    if (uid !== undefined && owned.get(uid)?.size === 0) owned.delete(uid);
    ownerOf.delete(key);
  };
  const index = (o: T) => {
    unindex(o);
    const uid = controllerUid(o);
    if (uid === undefined) return;
    const key = keyOf(o);
    ownerOf.set(key, uid);
    if (!owned.has(uid)) owned.set(uid, new Map());
    owned.get(uid)!.set(key, o);
  };
  const emit = (event: InformerEvent) => (o: T) => {
    if (event === "delete") unindex(o);
    else index(o);
    for (const l of listeners) l(event, o);
  };
  lw.on("add", emit("add"));
  lw.on("update", emit("update"));
  lw.on("delete", emit("delete"));
  lw.on("connect", () => {
    failed = false;
  });
  lw.on("error", (err: unknown) => {
    failed = true;
    if (stopped) return;
    opts.onError?.(resource, err, backoff);
    clearTimeout(timer);
    timer = setTimeout(() => void run(), backoff);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  });

  async function run(): Promise<void> {
    if (stopped) return;
    failed = false;
    await lw.start();
    if (!failed && !stopped) {
      synced = true;
      backoff = MIN_BACKOFF_MS;
    }
  }

  return {
    resource,
    get synced() {
      return synced;
    },
    get: (namespace, name) => lw.get(name, resource.namespaced ? namespace : undefined),
    list: (namespace) => lw.list(namespace),
    listOwnedBy: (uid) => [...(owned.get(uid)?.values() ?? [])],
    on: (cb) => void listeners.push(cb),
    start: run,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await lw.stop();
    },
  };
}
