import { GROUP, KIND, VERSION } from "../api/constants.ts";
import { PLURAL } from "../api/crd-definitions.ts";

/** Where a kind lives in the API. */
export interface Resource {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

const core = (kind: string, plural: string): Resource => ({ group: "", version: "v1", kind, plural, namespaced: true });
const ours = (kind: string, plural: string, namespaced = true): Resource => ({ group: GROUP, version: VERSION, kind, plural, namespaced });

/** Every kind the operator reads or writes. */
export const RESOURCES = {
  agent: ours(KIND.agent, PLURAL.agent),
  run: ours(KIND.run, PLURAL.run),
  policy: ours(KIND.policy, PLURAL.policy, false),
  approval: ours(KIND.approval, PLURAL.approval),
  pod: core("Pod", "pods"),
  configMap: core("ConfigMap", "configmaps"),
  secret: core("Secret", "secrets"),
  serviceAccount: core("ServiceAccount", "serviceaccounts"),
  pvc: core("PersistentVolumeClaim", "persistentvolumeclaims"),
  role: { group: "rbac.authorization.k8s.io", version: "v1", kind: "Role", plural: "roles", namespaced: true },
  roleBinding: { group: "rbac.authorization.k8s.io", version: "v1", kind: "RoleBinding", plural: "rolebindings", namespaced: true },
  networkPolicy: { group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy", plural: "networkpolicies", namespaced: true },
  namespace: { group: "", version: "v1", kind: "Namespace", plural: "namespaces", namespaced: false },
  runtimeClass: { group: "node.k8s.io", version: "v1", kind: "RuntimeClass", plural: "runtimeclasses", namespaced: false },
  lease: { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: true },
} as const satisfies Record<string, Resource>;

/** A kind's key in {@link RESOURCES}. */
export type ResourceName = keyof typeof RESOURCES;

/** `group/version`, or `v1` for the core group. */
export function apiVersionOf(res: Resource): string {
  return res.group ? `${res.group}/${res.version}` : res.version;
}

/** The REST path of a collection or object (`/api/v1/namespaces/ns/pods/name/status`). */
export function buildPath(res: Resource, namespace?: string, name?: string, subresource?: string): string {
  const base = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  const ns = res.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  const obj = name ? `/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ""}` : "";
  return `${base}${ns}/${res.plural}${obj}`;
}

/** The resource of an object by its apiVersion and kind, if it is one we know. */
export function resourceOf(apiVersion: string, kind: string): Resource | undefined {
  return Object.values(RESOURCES).find((r) => r.kind === kind && apiVersionOf(r) === apiVersion);
}
