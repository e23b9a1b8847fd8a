import { FIELD_MANAGER } from "../api/constants.ts";
import type { KubeClient } from "./client.ts";
import { isApiStatus } from "./errors.ts";
import { buildPath, resourceOf, type Resource } from "./resources.ts";

const APPLY = "application/apply-patch+yaml";

import type { KubeObject } from "../sandbox/kube-types.ts";

/** An object with the header every API object has: one declaration, the pure one the builders use. */
export type { KubeObject };

/** Which object of a resource: its namespace (none for a cluster-scoped one) and name. */
export interface ObjectRef {
  readonly namespace?: string | undefined;
  readonly name: string;
}

function resourceFor(obj: KubeObject): Resource {
  const res = resourceOf(obj.apiVersion, obj.kind);
  if (!res) throw new Error(`no resource known for ${obj.apiVersion} ${obj.kind}`);
  return res;
}

/**
 * Server-side apply under our field manager, forcing ownership of the fields we set (we are the controller of
 * these objects); strict field validation, so a field the server does not know fails loudly instead of vanishing.
 */
export async function applyObject<T extends KubeObject>(client: KubeClient, obj: T): Promise<T> {
  const res = resourceFor(obj);
  return client.request<T>("PATCH", buildPath(res, obj.metadata.namespace, obj.metadata.name), {
    query: { fieldManager: FIELD_MANAGER, force: true, fieldValidation: "Strict" },
    body: obj,
    contentType: APPLY,
  });
}

/** Server-side apply of the status subresource: the fields we own are set, the ones we stopped setting are removed. */
export async function applyStatus(client: KubeClient, res: Resource, ref: ObjectRef, status: unknown): Promise<KubeObject> {
  const { namespace, name } = ref;
  const body = { apiVersion: res.group ? `${res.group}/${res.version}` : res.version, kind: res.kind, metadata: { name, ...(namespace ? { namespace } : {}) }, status };
  return client.request<KubeObject>("PATCH", buildPath(res, namespace, name, "status"), {
    query: { fieldManager: FIELD_MANAGER, force: true, fieldValidation: "Strict" },
    body,
    contentType: APPLY,
  });
}

/** Create an object; `undefined` when it already exists (the caller reads the existing one). */
export async function createObject<T extends KubeObject>(client: KubeClient, obj: T): Promise<T | undefined> {
  try {
    return await client.request<T>("POST", buildPath(resourceFor(obj), obj.metadata.namespace), {
      query: { fieldManager: FIELD_MANAGER, fieldValidation: "Strict" },
      body: obj,
    });
  } catch (err) {
    if (isApiStatus(err, 409)) return undefined;
    throw err;
  }
}

/**
 * Replace an object whole (PUT) at `resourceVersion`: afterwards it holds exactly `obj`, and no field anyone else
 * set survives (an apply would keep those). A stale version is refused by the server with 409 Conflict.
 */
export async function replaceObject<T extends KubeObject>(client: KubeClient, obj: T, resourceVersion: string): Promise<T> {
  return client.request<T>("PUT", buildPath(resourceFor(obj), obj.metadata.namespace, obj.metadata.name), {
    query: { fieldManager: FIELD_MANAGER, fieldValidation: "Strict" },
    body: { ...obj, metadata: { ...obj.metadata, resourceVersion } },
  });
}

/** Read one object; `undefined` when it does not exist. */
export async function getObject<T extends KubeObject>(client: KubeClient, res: Resource, namespace: string | undefined, name: string): Promise<T | undefined> {
  try {
    return await client.request<T>("GET", buildPath(res, namespace, name));
  } catch (err) {
    if (isApiStatus(err, 404)) return undefined;
    throw err;
  }
}

/**
 * Delete one object, only if it is still the one we decided about (uid precondition), with dependents deleted in
 * the background. A missing object, or one already replaced, counts as done.
 */
export async function deleteObject(client: KubeClient, res: Resource, ref: ObjectRef & { readonly uid?: string | undefined }): Promise<void> {
  const { namespace, name, uid } = ref;
  try {
    await client.request("DELETE", buildPath(res, namespace, name), {
      body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background", ...(uid ? { preconditions: { uid } } : {}) },
    });
  } catch (err) {
    if (isApiStatus(err, 404) || (uid && isApiStatus(err, 409))) return;
    throw err;
  }
}

/**
 * Delete one object only if it is still at `resourceVersion` (nobody wrote it since it was read): true when it was
 * deleted or was gone already, false when it changed meanwhile (409: the caller looks at it again).
 */
export async function deleteObjectAtVersion(client: KubeClient, res: Resource, ref: ObjectRef & { readonly resourceVersion: string }): Promise<boolean> {
  try {
    await client.request("DELETE", buildPath(res, ref.namespace, ref.name), {
      body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background", preconditions: { resourceVersion: ref.resourceVersion } },
    });
    return true;
  } catch (err) {
    if (isApiStatus(err, 404)) return true;
    if (isApiStatus(err, 409)) return false;
    throw err;
  }
}

/** The media type of a metadata-only read: the server sends no `data`, so a Secret's values never reach us. */
const METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/** Read only the metadata of one object; `undefined` when it does not exist. */
export async function getObjectMetadata(client: KubeClient, res: Resource, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
  try {
    return await client.request<KubeObject>("GET", buildPath(res, namespace, name), { accept: METADATA_ONLY });
  } catch (err) {
    if (isApiStatus(err, 404)) return undefined;
    throw err;
  }
}
