import type { KubeClient } from "../kube/client.ts";
import { applyObject, applyStatus, createObject, deleteObject, deleteObjectAtVersion, getObject, getObjectMetadata, replaceObject, type KubeObject } from "../kube/objects.ts";
import { RESOURCES, resourceOf } from "../kube/resources.ts";
import type { ControllerMetrics } from "../metrics/controller-metrics.ts";
import type { ClusterWriter } from "./cluster-port.ts";
import { NotLeaderError } from "./controller-loop.ts";
import { buildObjectKeyOf } from "./object-key.ts";

/** What the writer needs: the client, the write counters and whether this process leads. */
export interface ClusterWriterDeps {
  client: KubeClient;
  metrics: ControllerMetrics;
  /** Whether writes are allowed right now (the lease is held). */
  isLeader: () => boolean;
}

/** The reconcilers' writes to the API server: each counted, each refused unless this process leads. */
export function createClusterWriter(opts: ClusterWriterDeps): ClusterWriter {
  const guard = () => {
    if (!opts.isLeader()) throw new NotLeaderError("not the leader");
  };
  /** Create `obj`; when its name is taken, read what holds it (counted as a create either way). */
  const createOrRead = async (obj: KubeObject): Promise<{ created: true; object: KubeObject } | { created: false; existing: KubeObject }> => {
    opts.metrics.write("create", obj.kind);
    const created = await createObject(opts.client, obj);
    if (created) return { created: true, object: created };
    const existing = await getObject(opts.client, resourceOf(obj.apiVersion, obj.kind)!, obj.metadata.namespace, obj.metadata.name);
    if (!existing) throw new Error(`${obj.kind} ${buildObjectKeyOf(obj)} exists and then does not: retry`);
    return { created: false, existing };
  };
  return {
    async apply(obj) {
      guard();
      opts.metrics.write("apply", obj.kind);
      await applyObject(opts.client, obj);
    },
    async applyStatus(res, ns, name, status) {
      guard();
      opts.metrics.write("apply_status", RESOURCES[res].kind);
      await applyStatus(opts.client, RESOURCES[res], { namespace: ns, name }, status);
    },
    async create(obj) {
      guard();
      opts.metrics.write("create", obj.kind);
      if (await createObject(opts.client, obj)) return;
      opts.metrics.write("apply", obj.kind);
      await applyObject(opts.client, obj);
    },
    read: (res, ns, name) => getObject(opts.client, RESOURCES[res], ns, name),
    readMetadata: (res, ns, name) => getObjectMetadata(opts.client, RESOURCES[res], ns, name),
    async replace(obj, resourceVersion) {
      guard();
      let version = resourceVersion;
      if (version === undefined) {
        const found = await createOrRead(obj);
        if (found.created) return;
        version = found.existing.metadata.resourceVersion;
        if (version === undefined) throw new Error(`${obj.kind} ${buildObjectKeyOf(obj)} was read without a resourceVersion: retry`);
      }
      opts.metrics.write("replace", obj.kind);
      await replaceObject(opts.client, obj, version);
    },
    async createOrGet(obj) {
      guard();
      const found = await createOrRead(obj);
      return found.created ? found.object : found.existing;
    },
    async createOrFind(obj) {
      guard();
      const found = await createOrRead(obj);
      return found.created ? { created: true, object: found.object } : { created: false, object: found.existing };
    },
    async delete(obj) {
      guard();
      opts.metrics.write("delete", obj.kind);
      await deleteObject(opts.client, resourceOf(obj.apiVersion, obj.kind)!, obj.metadata);
    },
    async deleteAtVersion(obj) {
      guard();
      const { resourceVersion } = obj.metadata;
      if (resourceVersion === undefined) throw new Error(`${obj.kind} ${buildObjectKeyOf(obj)} has no resourceVersion to delete at`);
      opts.metrics.write("delete", obj.kind);
      return deleteObjectAtVersion(opts.client, resourceOf(obj.apiVersion, obj.kind)!, { namespace: obj.metadata.namespace, name: obj.metadata.name, resourceVersion });
    },
  };
}
