// The few Kubernetes shapes the builders produce, kept here so pure code needs no client library.

/** `metadata.ownerReferences[]`. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Object metadata: what the builders write, and what the API server adds (read back, never built). */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  finalizers?: string[];
  managedFields?: unknown[];
}

/** Any Kubernetes object; fields beyond the header are the kind's own. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** A container as built here (a subset of `core/v1.Container`). */
export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: Record<string, unknown>[];
  envFrom?: Record<string, unknown>[];
  /** `Always` on an init container makes it a native sidecar. */
  restartPolicy?: "Always";
  securityContext: Record<string, unknown>;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
  ports?: Record<string, unknown>[];
}

/** A volume: a name plus exactly one source. */
export type Volume = { name: string } & Record<string, unknown>;

/** A pod as built here. */
export interface Pod extends KubeObject {
  apiVersion: "v1";
  kind: "Pod";
  spec: {
    containers: Container[];
    initContainers?: Container[];
    volumes: Volume[];
    terminationGracePeriodSeconds?: number;
    securityContext: Record<string, unknown>;
    restartPolicy: "Never";
    automountServiceAccountToken: false;
    enableServiceLinks: false;
    serviceAccountName?: string;
    runtimeClassName?: string;
    affinity?: Record<string, unknown>;
    hostNetwork?: false;
    hostPID?: false;
    hostIPC?: false;
  };
}
