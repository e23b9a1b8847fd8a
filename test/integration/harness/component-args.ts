import type { Certificates } from "./generate-certificates.ts";

/** The loopback ports one control plane listens on. */
export type Ports = { etcdClient: number; etcdPeer: number; apiServer: number; controllerManager: number };

/** The range Service cluster IPs come from; nothing routes to it (there is no node and no kube-proxy). */
export const SERVICE_CIDR = "10.96.0.0/24";

/**
 * The admission plugins a production cluster runs (kubeadm's defaults plus NodeRestriction), named
 * explicitly so a change of the API server's defaults cannot silently drop PodSecurity or quota checks.
 */
export const ADMISSION_PLUGINS = [
  "NamespaceLifecycle",
  "LimitRanger",
  "ServiceAccount",
  "NodeRestriction",
  "PodSecurity",
  "Priority",
  "DefaultTolerationSeconds",
  "DefaultStorageClass",
  "StorageObjectInUseProtection",
  "PersistentVolumeClaimResize",
  "RuntimeClass",
  "CertificateApproval",
  "CertificateSigning",
  "CertificateSubjectRestriction",
  "DefaultIngressClass",
  "TaintNodesByCondition",
  "MutatingAdmissionPolicy",
  "MutatingAdmissionWebhook",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionWebhook",
  "ResourceQuota",
] as const;

/** etcd on loopback only, without fsync: the data dir is thrown away after the run. */
export function buildEtcdArgs(dataDir: string, ports: Ports): string[] {
  const client = `http://127.0.0.1:${ports.etcdClient}`;
  const peer = `http://127.0.0.1:${ports.etcdPeer}`;
  return [
    "--name=leviath-test",
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=leviath-test=${peer}`,
    "--initial-cluster-state=new",
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ];
}

/** kube-apiserver as a real cluster runs it: TLS, client certificates, RBAC and Node authorization, the full admission chain. */
export function buildApiServerArgs(certDir: string, certs: Certificates, ports: Ports): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${ports.etcdClient}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    // The lease reconciler refuses loopback addresses; nothing in-cluster dials the `kubernetes` Service here.
    "--endpoint-reconciler-type=none",
    `--secure-port=${ports.apiServer}`,
    `--cert-dir=${certDir}`,
    `--tls-cert-file=${certs.serverCert}`,
    `--tls-private-key-file=${certs.serverKey}`,
    `--client-ca-file=${certs.caCert}`,
    // How it authenticates to a kubelet (the real node's kubelet allows no anonymous request).
    `--kubelet-client-certificate=${certs.kubeletClientCert}`,
    `--kubelet-client-key=${certs.kubeletClientKey}`,
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${certs.serviceAccountPub}`,
    `--service-account-signing-key-file=${certs.serviceAccountKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    // A webhook behind a Service (the chart's, on by default) is called at its ready pods' addresses, as clusters
    // without kube-proxy on the control plane do: there is no kube-proxy here, so a cluster IP would go nowhere
    // (or out through the default route); with no ready pod the call fails at once, on this machine.
    "--enable-aggregator-routing=true",
    "--authorization-mode=Node,RBAC",
    `--enable-admission-plugins=${ADMISSION_PLUGINS.join(",")}`,
    "--allow-privileged=true",
    // LEVIATH_PROFILING=1 serves /debug/pprof (a CPU profile of the API server under a bench's load).
    `--profiling=${process.env.LEVIATH_PROFILING === "1"}`,
  ];
}

/**
 * kube-controller-manager with every default controller (garbage collector, namespace deletion,
 * service accounts, ...) under their own service-account credentials, as kubeadm runs it.
 */
export function buildControllerManagerArgs(certDir: string, kubeconfig: string, certs: Certificates, ports: Ports): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${ports.controllerManager}`,
    `--cert-dir=${certDir}`,
    // Our CA's loopback certificate, so its /healthz can be probed with verification (not a self-signed one).
    `--tls-cert-file=${certs.serverCert}`,
    `--tls-private-key-file=${certs.serverKey}`,
    "--leader-elect=false",
    "--use-service-account-credentials=true",
    `--service-account-private-key-file=${certs.serviceAccountKey}`,
    `--root-ca-file=${certs.caCert}`,
    `--cluster-signing-cert-file=${certs.caCert}`,
    `--cluster-signing-key-file=${certs.caKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    "--controllers=*",
    `--profiling=${process.env.LEVIATH_PROFILING === "1"}`,
  ];
}

/** An admin kubeconfig with everything embedded, so the file alone is enough (kubectl, helm, client-node). */
export function buildKubeconfig(server: string, ca: Buffer, cert: Buffer, key: Buffer): string {
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "leviath-test", cluster: { server, "certificate-authority-data": ca.toString("base64") } }],
    users: [{ name: "leviath-admin", user: { "client-certificate-data": cert.toString("base64"), "client-key-data": key.toString("base64") } }],
    contexts: [{ name: "leviath-test", context: { cluster: "leviath-test", user: "leviath-admin", namespace: "default" } }],
    "current-context": "leviath-test",
  };
  // JSON is YAML, and every kubeconfig reader accepts it.
  return JSON.stringify(config, null, 2) + "\n";
}
