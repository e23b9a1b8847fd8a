// The key of an object in the work queues and the controller's own maps: `namespace/name`, or the bare name of a
// cluster-scoped object (the LeviathPolicy `cluster`), as client-go's MetaNamespaceKeyFunc writes it. Neither part
// can hold a `/`, so the first one splits them.
import type { KubeObject } from "../kube/objects.ts";

/** A parsed key: the namespace is absent for a cluster-scoped object. */
export interface ObjectKey {
  namespace: string | undefined;
  name: string;
}

/** The key of the object `name` in `namespace` (cluster-scoped without one). */
export function buildObjectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** The key of an object, from its metadata. */
export function buildObjectKeyOf(obj: Pick<KubeObject, "metadata">): string {
  return buildObjectKey(obj.metadata.namespace, obj.metadata.name);
}

/** The namespace and name a key names. */
export function parseObjectKey(key: string): ObjectKey {
  const slash = key.indexOf("/");
  return slash < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
