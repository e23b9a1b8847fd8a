// The indexed store behind an informer: objects by key, by namespace and by controller owner, and the listeners
// told of each change. informer.ts keeps it current by list and watch.
import type { KubeObject } from "./objects.ts";

/** What an informer tells its listeners. */
export type InformerEvent = "add" | "update" | "delete";

/** One informer's cache. */
export interface InformerCache<T extends KubeObject> {
  /** The cache key of an object: `namespace/name` (`/name` for a cluster-scoped kind). */
  keyOf(o: T): string;
  lookup(key: string): T | undefined;
  get(namespace: string | undefined, name: string): T | undefined;
  list(namespace?: string): readonly T[];
  /** Objects whose controller owner reference has this uid. */
  listOwnedBy(uid: string): readonly T[];
  /** A copy of every entry, safe to change the cache while walking it. */
  entries(): [string, T][];
  /** Stores (or, for a delete, drops) the object and tells the listeners. */
  store(event: InformerEvent, o: T): void;
  on(cb: (event: InformerEvent, obj: T) => void): void;
}

function controllerUid(obj: KubeObject): string | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller)?.uid;
}

/** An empty cache for a kind that is namespaced or not. */
export function createInformerCache<T extends KubeObject>(namespaced: boolean): InformerCache<T> {
  const objects = new Map<string, T>();
  const byNamespace = new Map<string, Map<string, T>>();
  const owned = new Map<string, Map<string, T>>();
  const ownerOf = new Map<string, string>();
  const listeners: ((event: InformerEvent, obj: T) => void)[] = [];

  const keyOf = (namespace: string | undefined, name: string) => `${namespaced ? namespace ?? "" : ""}/${name}`;
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
    const key = keyOf(o.metadata.namespace, o.metadata.name);
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

  return {
    keyOf: (o) => keyOf(o.metadata.namespace, o.metadata.name),
    lookup: (key) => objects.get(key),
    get: (namespace, name) => objects.get(keyOf(namespace, name)),
    list: (namespace) => [...(namespace === undefined ? objects : byNamespace.get(namespace) ?? []).values()],
    listOwnedBy: (uid) => [...(owned.get(uid)?.values() ?? [])],
    entries: () => [...objects],
    store,
    on: (cb) => void listeners.push(cb),
  };
}
