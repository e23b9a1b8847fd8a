import type { KubeObject } from "../kube/objects.ts";
import type { ResourceName } from "../kube/resources.ts";

/** Objects the reconcilers read: the informer caches, never the API server. */
export interface ClusterCache {
  get(resource: ResourceName, namespace: string | undefined, name: string): KubeObject | undefined;
  list(resource: ResourceName, namespace?: string): readonly KubeObject[];
  /** Every cached child (pods, ConfigMaps, RBAC, NetworkPolicies, claims) whose controller is this uid. */
  listOwnedBy(uid: string): readonly KubeObject[];
}

/** The writes the reconcilers make; each refuses to run when this process is not the leader. */
export interface ClusterWriter {
  apply(obj: KubeObject): Promise<void>;
  applyStatus(resource: ResourceName, namespace: string | undefined, name: string, status: unknown): Promise<void>;
  /** Read one object from the API server itself (only where a stale cache could make us decide twice). */
  read(resource: ResourceName, namespace: string | undefined, name: string): Promise<KubeObject | undefined>;
  /** Read only an object's metadata from the API server (a Secret's labels, never its data). */
  readMetadata(resource: ResourceName, namespace: string | undefined, name: string): Promise<KubeObject | undefined>;
  /**
   * Create an object the cache does not hold (a pod, which is never updated afterwards, or a new child). When the
   * name is taken already, it is applied instead, so what holds the name is taken over or the error says why.
   */
  create(obj: KubeObject): Promise<void>;
  /**
   * Make the object exactly `obj`, whole: replaced (PUT) at `resourceVersion`, or, without one, created and, when
   * the name is taken already, read and replaced at the version read. Unlike an apply, no field someone else set
   * survives. A version gone stale is refused (409) and the pass retries.
   */
  replace(obj: KubeObject, resourceVersion: string | undefined): Promise<void>;
  /** Create; when the object already exists, read and return the existing one instead. */
  createOrGet(obj: KubeObject): Promise<KubeObject>;
  /**
   * Create, saying whether this request made the object (`created`, with the server's answer: its uid is one no
   * other party chose) or found one under its name (`created: false`, the existing object as read).
   */
  createOrFind(obj: KubeObject): Promise<{ created: boolean; object: KubeObject }>;
  delete(obj: KubeObject): Promise<void>;
  /** Delete only if the object is still at its `resourceVersion`: false when someone wrote it since (a pool pod just claimed). */
  deleteAtVersion(obj: KubeObject): Promise<boolean>;
}

/** A reconciler's answer: done, or look again after a while (a readiness deadline, a pod still terminating). */
export interface ReconcileResult {
  requeueAfterMs?: number;
}
