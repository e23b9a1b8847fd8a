// What the controller's informers keep of each kind: the fields the reconcilers and the status code read, and
// nothing else. At 10,000 Runs most of the cache was pod specs that nothing reads (a pod is compared by its
// spec-hash annotation, never by its spec) and copies of the same snapshot text in every Run's ConfigMap
// (docs/benchmarks-history.md, "Controller memory: the profile and what changed"). A field a reconciler starts reading
// must be kept here too; test/integration/controller/cached-fields.test.ts checks the cache against the server.
import { createHash } from "node:crypto";
import type { KubeObject } from "../kube/objects.ts";
import type { ResourceName } from "../kube/resources.ts";
import type { ObjectMeta } from "../sandbox/kube-types.ts";
import type { PodObject } from "./owned-children.ts";

/** What any cached object keeps of its metadata (managedFields and the kubectl annotation are gone already). */
const METADATA_KEPT = ["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "labels", "annotations", "ownerReferences"] as const;

/** The defined fields of `obj` among `keys`. */
function pick<T extends object, K extends keyof T>(obj: T, keys: readonly K[]): Pick<T, K> {
  const out: Partial<T> = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return out as Pick<T, K>;
}

function keepMetadata(metadata: ObjectMeta): ObjectMeta {
  return pick(metadata, METADATA_KEPT);
}

/** The header and metadata only: Namespaces (their Pod Security labels) and RuntimeClasses (whether one exists). */
export function keepMetadataOnly(obj: KubeObject): KubeObject {
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata: keepMetadata(obj.metadata) };
}

/** The status fields kept are exactly those the Run reconciler's pod type declares. */
type PodStatus = NonNullable<PodObject["status"]>;

/** The scheduler's verdict on a pod it could not place: what a Run waiting on it says (its PodsWaiting condition). */
const UNSCHEDULED = (c: { type: string; status: string }) => c.type === "PodScheduled" && c.status === "False";

function keepPodCondition(c: NonNullable<PodStatus["conditions"]>[number]): NonNullable<PodStatus["conditions"]>[number] {
  return UNSCHEDULED(c) ? { type: c.type, status: c.status, ...pick(c, ["reason", "message"]) } : { type: c.type, status: c.status };
}

/**
 * A pod as the Run reconciler reads it: its metadata (the spec-hash annotation, owner, deletion) and the status
 * it observes (phase, reason, message, each condition's type and status, each container's name and how it
 * terminated, and the scheduler's reason and message when it could not place the pod). The spec is dropped: a
 * desired pod is compared by its spec-hash annotation, never field by field.
 */
export function keepPodFields(pod: KubeObject): KubeObject {
  const status = pod["status"] as PodStatus | undefined;
  if (status === undefined) return keepMetadataOnly(pod);
  const kept: PodStatus = pick(status, ["phase", "reason", "message"]);
  if (status.conditions) kept.conditions = status.conditions.map(keepPodCondition);
  if (status.containerStatuses) {
    kept.containerStatuses = status.containerStatuses.map((c) => {
      const terminated = c.state?.terminated;
      return { name: c.name, ...(terminated ? { state: { terminated: pick(terminated, ["exitCode", "reason", "message"]) } } : {}) };
    });
  }
  return { ...keepMetadataOnly(pod), status: kept };
}

/** Most distinct texts an interner keeps, and the longest text it keeps. */
const INTERN_MAX_ENTRIES = 1024;
const INTERN_MAX_LENGTH = 1024 * 1024;

/** Returns the one kept copy of a text (or the text itself, now kept); `size` is how many texts it keeps. */
export interface TextInterner {
  (text: string): string;
  readonly size: number;
}

/**
 * One copy of each text for many objects: Runs of one Agent under one policy generation have byte-identical
 * snapshot ConfigMaps, and a parsed watch event is a fresh copy each time. Texts are found by their SHA-256 (V8
 * hashes only the length of a string past 16 K characters, so a map keyed by the text would compare long texts of
 * equal length one by one) and compared in full before one is shared. Bounded: the least recently seen text is
 * forgotten first (a forgotten text stays valid wherever it is used; it is only no longer shared).
 */
export function createTextInterner(maxEntries = INTERN_MAX_ENTRIES, maxLength = INTERN_MAX_LENGTH): TextInterner {
  const seen = new Map<string, string>();
  const intern = (text: string): string => {
    if (text.length > maxLength) return text;
    const digest = createHash("sha256").update(text, "utf8").digest("base64");
    const known = seen.get(digest);
    seen.delete(digest);
    const shared = known === text ? known : text;
    seen.set(digest, shared);
    if (seen.size > maxEntries) seen.delete(seen.keys().next().value!);
    return shared;
  };
  return Object.defineProperty(intern, "size", { get: () => seen.size }) as TextInterner;
}

/** A ConfigMap with each value of `data` shared with every other ConfigMap holding the same text. */
export function createConfigMapInterning(intern: (text: string) => string = createTextInterner()): (cm: KubeObject) => KubeObject {
  return (cm) => {
    const data = cm["data"] as Record<string, string> | undefined;
    if (data) for (const key of Object.keys(data)) data[key] = intern(data[key]!);
    return cm;
  };
}

/** The transform of each cached kind that keeps less than the whole object (the others keep all of it). */
export function buildCacheTransforms(): Partial<Record<ResourceName, (obj: KubeObject) => KubeObject>> {
  return {
    pod: keepPodFields,
    configMap: createConfigMapInterning(),
    namespace: keepMetadataOnly,
    runtimeClass: keepMetadataOnly,
  };
}
