// A real dynamic storage provisioner on the node (issue 44): Rancher's local-path-provisioner, built from its Go
// module by scripts/provisioner-bin into the image leviath-local-path (scripts/build-images). A claim of its
// StorageClass waits for its first pod (WaitForFirstConsumer); once the scheduler placed that pod, the provisioner
// starts a helper pod on that node (the busybox `sandbox` image, as root) that makes the claim's directory under
// `hostDir`, and creates a hostPath PersistentVolume for it pinned to the node; deleting the claim removes both.
// The demo and the e2e suite's node (test/e2e/global-setup.ts; a test file that starts a node of its own does the
// same) install it as the cluster's default class, so any Run's claim binds with no hand-made volume. A test that
// must see or plant files at a known host path still pre-binds a hostPath volume to the claim (createWorkspaces in
// operator-fixture.ts), of this class: the admission plugin DefaultStorageClass gives a claim that names no class
// the default one, and a volume binds only a claim of its own class.
import { join } from "node:path";
import { stringify } from "yaml";
import { kubectl, waitFor } from "../../integration/harness/index.ts";
import { getJson } from "./kube-json.ts";

/** The provisioner's namespace (its own: the helper pods need root and a hostPath, which no Pod Security level but `privileged` admits). */
export const LOCAL_PATH_NAMESPACE = "local-path-storage";
/** Its StorageClass. */
export const LOCAL_PATH_CLASS = "local-path";
/** The provisioner name the StorageClass names. */
export const LOCAL_PATH_PROVISIONER = "rancher.io/local-path";

export interface LocalPathOptions {
  /** leviath-local-path, as the node has it. */
  readonly image: string;
  /** The helper pods' image: anything with `sh`, `mkdir` and `rm` (the node's busybox `sandbox` image). */
  readonly helperImage: string;
  /** The node directory under which each claim gets its own directory. */
  readonly hostDir: string;
  /** Mark the StorageClass the cluster's default (claims that name no class get it). */
  readonly isDefault: boolean;
}

const labels = { "app.kubernetes.io/name": "local-path-provisioner", "app.kubernetes.io/part-of": "leviath-demo" };

/** Every object the provisioner needs, in apply order: namespace, RBAC, configuration, Deployment, StorageClass. */
export function buildLocalPathObjects(o: LocalPathOptions): Record<string, unknown>[] {
  const ns = LOCAL_PATH_NAMESPACE;
  const sa = "local-path-provisioner";
  const meta = (name: string, namespaced = true) => ({ name, ...(namespaced ? { namespace: ns } : {}), labels });
  // The provisioner reads claims, nodes and its configuration cluster-wide and writes volumes and events; in its own
  // namespace it runs and removes the helper pods (and reads their logs).
  const clusterRules = [
    { apiGroups: [""], resources: ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get", "list", "watch", "create", "patch", "update", "delete"] },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
    { apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: ["get", "list", "watch"] },
  ];
  const helperPod = {
    apiVersion: "v1", kind: "Pod", metadata: { name: "helper-pod" },
    spec: {
      containers: [{
        name: "helper", image: o.helperImage, imagePullPolicy: "Never",
        // The sandbox image runs as 65532; the claim's directory is made on the node's file system, as root.
        securityContext: { runAsUser: 0, runAsGroup: 0 },
      }],
    },
  };
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: ns, labels } },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta(sa) },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: meta("leviath-local-path-provisioner", false), rules: clusterRules },
    {
      apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: meta("leviath-local-path-provisioner", false),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "leviath-local-path-provisioner" },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace: ns }],
    },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: meta("local-path-helper-pods"), rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", "create", "patch", "update", "delete"] }] },
    {
      apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: meta("local-path-helper-pods"),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "local-path-helper-pods" },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace: ns }],
    },
    {
      apiVersion: "v1", kind: "ConfigMap", metadata: meta("local-path-config"),
      data: {
        "config.json": JSON.stringify({ nodePathMap: [{ node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [o.hostDir] }] }),
        // World-writable: the Run's pods run as 65532 and write their workspace.
        setup: "#!/bin/sh\nset -eu\nmkdir -m 0777 -p \"$VOL_DIR\"\n",
        teardown: "#!/bin/sh\nset -eu\nrm -rf \"$VOL_DIR\"\n",
        "helperPod.yaml": stringify(helperPod),
      },
    },
    {
      apiVersion: "apps/v1", kind: "Deployment", metadata: meta("local-path-provisioner"),
      spec: {
        replicas: 1, selector: { matchLabels: { "app.kubernetes.io/name": "local-path-provisioner" } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: sa,
            containers: [{
              name: "provisioner", image: o.image, imagePullPolicy: "Never",
              args: ["start", "--config", "/etc/config/config.json", "--provisioner-name", LOCAL_PATH_PROVISIONER, "--namespace", ns,
                "--service-account-name", sa, "--configmap-name", "local-path-config", "--helper-image", o.helperImage],
              env: [{ name: "POD_NAMESPACE", value: ns }, { name: "CONFIG_MOUNT_PATH", value: "/etc/config/" }],
              securityContext: { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
              volumeMounts: [{ name: "config", mountPath: "/etc/config/" }],
            }],
            volumes: [{ name: "config", configMap: { name: "local-path-config" } }],
          },
        },
      },
    },
    {
      apiVersion: "storage.k8s.io/v1", kind: "StorageClass",
      metadata: { name: LOCAL_PATH_CLASS, labels, ...(o.isDefault ? { annotations: { "storageclass.kubernetes.io/is-default-class": "true" } } : {}) },
      provisioner: LOCAL_PATH_PROVISIONER, volumeBindingMode: "WaitForFirstConsumer", reclaimPolicy: "Delete",
    },
  ];
}

/**
 * Installs the provisioner on a node started by the harness (test/e2e/harness/node.ts) as the cluster's default
 * class, its volumes under the node's data directory (removed with it); the node must have imported leviath-local-path.
 */
export async function installNodeLocalPath(node: { readonly images: Readonly<Record<string, string>>; readonly dataDir: string }): Promise<void> {
  const image = node.images["leviath-local-path"];
  const helperImage = node.images["sandbox"];
  if (!image || !helperImage) throw new Error("the node has no leviath-local-path or sandbox image: run 'bash scripts/build-images'");
  await installLocalPath({ image, helperImage, hostDir: join(node.dataDir, "local-path"), isDefault: true });
}

/** Applies the provisioner and waits until its pod runs. */
export async function installLocalPath(o: LocalPathOptions): Promise<void> {
  await kubectl(["apply", "-f", "-"], { input: buildLocalPathObjects(o).map((x) => stringify(x)).join("---\n") });
  await waitFor(async () => {
    const pods = await getJson<{ items: { status?: { phase?: string } }[] }>(["get", "pods", "-n", LOCAL_PATH_NAMESPACE, "-l", "app.kubernetes.io/name=local-path-provisioner"]);
    return pods.items.some((p) => p.status?.phase === "Running");
  }, { timeoutMs: 180_000, intervalMs: 1000, description: "the local-path provisioner's pod Running" });
}

/**
 * Removes the provisioner; its volumes first (`pvs`: those it made, deleted with their claims beforehand), so that
 * it still runs the helper pods that remove their directories.
 */
export async function uninstallLocalPath(): Promise<void> {
  await waitFor(async () => {
    const pvs = await getJson<{ items: { spec?: { storageClassName?: string } }[] }>(["get", "pv"]);
    return pvs.items.every((pv) => pv.spec?.storageClassName !== LOCAL_PATH_CLASS);
  }, { timeoutMs: 120_000, intervalMs: 1000, description: "the local-path volumes deleted" }).catch(() => undefined);
  await kubectl(["delete", "storageclass", LOCAL_PATH_CLASS, "--ignore-not-found"], { allowFailure: true });
  await kubectl(["delete", "clusterrolebinding,clusterrole", "leviath-local-path-provisioner", "--ignore-not-found"], { allowFailure: true });
  await kubectl(["delete", "namespace", LOCAL_PATH_NAMESPACE, "--ignore-not-found", "--wait=false"], { allowFailure: true });
}
