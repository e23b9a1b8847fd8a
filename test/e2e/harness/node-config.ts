// Pure builders of the node's configuration files and command lines: containerd, the CNI network,
// kube-scheduler and the kubelet. node.ts writes them into the node's throwaway data dir.

/** Where one node keeps everything (all inside its data dir but the cgroups, the bridge and the NAT chain). */
export type NodeLayout = {
  dataDir: string;
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  cniConfDir: string;
  cniIpamDir: string;
  kubeletRoot: string;
  podLogsDir: string;
  /** The kubelet's cgroup root (cgroupfs driver): every pod lives below it in every v1 hierarchy. */
  cgroupRoot: string;
};

/** The pod network: a bridge the harness creates, a /24 from host-local IPAM, and the bridge's own address. */
export type PodNetwork = {
  /** CNI network name (unique per node, so its CNI cache entries are recognisably ours). */
  name: string;
  bridge: string;
  subnet: string;
  /** The bridge's address: the node's InternalIP and the pods' only gateway. */
  gateway: string;
  /** Routed to the gateway, so the `kubernetes` Service IP can be forwarded to the API server. */
  serviceCidr: string;
};

/** The ports the node's components listen on, all on 127.0.0.1. */
export type NodePorts = { kubelet: number; kubeletHealthz: number; scheduler: number };

/** Debian's runc and CNI plugin locations (packages runc and containernetworking-plugins). */
export const RUNC = "/usr/sbin/runc";
export const CNI_BIN_DIR = "/usr/lib/cni";

/**
 * containerd 1.6 (config version 2) with its own root, state and socket, the CRI plugin using runc with
 * the cgroupfs driver, the given pause image (imported, never pulled) and our CNI conf dir.
 */
export function buildContainerdConfig(layout: NodeLayout, pauseImage: string): string {
  const cri = `plugins."io.containerd.grpc.v1.cri"`;
  return `version = 2
root = ${toml(layout.containerdRoot)}
state = ${toml(layout.containerdState)}
# Snapshotters this machine cannot use; without this they log errors at every start.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = ${toml(layout.containerdSocket)}

[ttrpc]
  address = ${toml(`${layout.containerdSocket}.ttrpc`)}

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ${toml(`${layout.containerdRoot}/opt`)}

[${cri}]
  sandbox_image = ${toml(pauseImage)}
  # Exec and attach streams: loopback only, a free port (the kubelet proxies to it).
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # Nobody may lower an oom_score_adj on these machines, root included; runc fails a sandbox whose spec
  # asks for -998. This clamps every requested value to containerd's own, as for rootless containerd.
  restrict_oom_score_adj = true
  # Pod network namespaces in our state dir, not /var/run/netns: teardown finds them with the other mounts.
  netns_mounts_under_state_dir = true
  max_container_log_line_size = 16384

  [${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    discard_unpacked_layers = false

    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [${cri}.containerd.runtimes.runc.options]
        BinaryName = ${toml(RUNC)}
        SystemdCgroup = false

  [${cri}.cni]
    bin_dir = ${toml(CNI_BIN_DIR)}
    conf_dir = ${toml(layout.cniConfDir)}
    max_conf_num = 1
`;
}

/**
 * The CNI network: Debian's bridge plugin on a bridge the harness made (so no plugin changes host
 * sysctls: `isGateway` is off and the address is already there), host-local IPAM with its state in the
 * data dir, and no default route in the pods: they reach each other, the node's bridge address and the
 * Service range, nothing else. The bridge plugin enforces no NetworkPolicy.
 */
export function buildCniConfig(network: PodNetwork, ipamDir: string): string {
  const config = {
    cniVersion: "1.0.0",
    name: network.name,
    plugins: [
      {
        type: "bridge",
        bridge: network.bridge,
        isGateway: false,
        isDefaultGateway: false,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: network.subnet, gateway: network.gateway }]],
          routes: [{ dst: network.serviceCidr, gw: network.gateway }],
          dataDir: ipamDir,
        },
      },
    ],
  };
  return JSON.stringify(config, null, 2) + "\n";
}

/** Sizing of the node: what it holds back for itself and the rest, on the 2-core, 24 GiB machines. */
export type NodeSizing = { systemReservedCpu: string; systemReservedMemory: string; maxPods: number; podPidsLimit: number };

/** Defaults for the 2-core, 24 GiB machines: pods get 1.5 cores and 20 GiB at most, 1024 processes each. */
export const DEFAULT_SIZING: NodeSizing = { systemReservedCpu: "500m", systemReservedMemory: "4Gi", maxPods: 30, podPidsLimit: 1024 };

/**
 * The kubelet's configuration for this machine: cgroup v1 accepted explicitly (`failCgroupV1: false`),
 * the cgroupfs driver under our own cgroup root, no swap check, loopback-only server that authenticates
 * every request (client certificates of the control plane's CA, bearer tokens through the API server) and
 * authorizes it with a SubjectAccessReview (no anonymous access), eviction
 * thresholds in absolute sizes (a percentage of a 250 GB disk would evict with 40 GB free), image garbage
 * collection off (our images cannot be pulled back), and nothing written outside the data dir.
 */
export function buildKubeletConfig(layout: NodeLayout, ports: NodePorts, caFile: string, sizing: NodeSizing = DEFAULT_SIZING): string {
  const config = {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: "127.0.0.1",
    port: ports.kubelet,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: ports.kubeletHealthz,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true, cacheTTL: "30s" }, x509: { clientCAFile: caFile } },
    authorization: { mode: "Webhook", webhook: { cacheAuthorizedTTL: "30s", cacheUnauthorizedTTL: "5s" } },
    containerRuntimeEndpoint: `unix://${layout.containerdSocket}`,
    imageServiceEndpoint: `unix://${layout.containerdSocket}`,
    cgroupDriver: "cgroupfs",
    cgroupRoot: layout.cgroupRoot,
    cgroupsPerQOS: true,
    failCgroupV1: false,
    failSwapOn: false,
    enforceNodeAllocatable: ["pods"],
    systemReserved: { cpu: sizing.systemReservedCpu, memory: sizing.systemReservedMemory },
    maxPods: sizing.maxPods,
    podPidsLimit: sizing.podPidsLimit,
    evictionHard: { "memory.available": "500Mi", "nodefs.available": "1Gi", "imagefs.available": "1Gi", "nodefs.inodesFree": "1%", "imagefs.inodesFree": "1%" },
    evictionPressureTransitionPeriod: "30s",
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // Pods get no nameserver of the host's (there is no cluster DNS either).
    resolvConf: "",
    podLogsDir: layout.podLogsDir,
    volumePluginDir: `${layout.kubeletRoot}/volume-plugins`,
    serializeImagePulls: false,
    registerNode: true,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    nodeStatusUpdateFrequency: "5s",
    nodeStatusReportFrequency: "30s",
    syncFrequency: "10s",
    fileCheckFrequency: "20s",
    containerLogMaxSize: "10Mi",
    containerLogMaxFiles: 2,
    shutdownGracePeriod: "0s",
    localStorageCapacityIsolation: true,
  };
  return JSON.stringify(config, null, 2) + "\n";
}

/** The kubelet's flags: what the config file cannot say. */
export function buildKubeletArgs(layout: NodeLayout, configPath: string, kubeconfigPath: string, nodeName: string, nodeIp: string): string[] {
  return [
    `--config=${configPath}`,
    `--kubeconfig=${kubeconfigPath}`,
    `--root-dir=${layout.kubeletRoot}`,
    `--cert-dir=${layout.kubeletRoot}/pki`,
    // The API server reaches a kubelet at its Hostname address first: "localhost" makes that loopback.
    `--hostname-override=${nodeName}`,
    `--node-ip=${nodeIp}`,
    "--v=2",
  ];
}

/** kube-scheduler on loopback with its own identity (system:kube-scheduler) and a verifiable /healthz. */
export function buildSchedulerArgs(kubeconfigPath: string, certDir: string, servingCert: string, servingKey: string, port: number): string[] {
  return [
    `--kubeconfig=${kubeconfigPath}`,
    `--authentication-kubeconfig=${kubeconfigPath}`,
    `--authorization-kubeconfig=${kubeconfigPath}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${port}`,
    `--cert-dir=${certDir}`,
    `--tls-cert-file=${servingCert}`,
    `--tls-private-key-file=${servingKey}`,
    "--leader-elect=false",
    "--profiling=false",
  ];
}

/** A kubeconfig for one client-certificate identity (the kubelet's, the scheduler's). */
export function buildClientKubeconfig(server: string, user: string, ca: Buffer, cert: Buffer, key: Buffer): string {
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "leviath-test", cluster: { server, "certificate-authority-data": ca.toString("base64") } }],
    users: [{ name: user, user: { "client-certificate-data": cert.toString("base64"), "client-key-data": key.toString("base64") } }],
    contexts: [{ name: "leviath-test", context: { cluster: "leviath-test", user } }],
    "current-context": "leviath-test",
  };
  return JSON.stringify(config, null, 2) + "\n";
}

function toml(value: string): string {
  return JSON.stringify(value);
}
