// The e2e harness in one import: the node on top of the control plane, the sandbox pod the operator
// would make, and running commands inside pods. The integration harness (../../integration/harness)
// still provides the cluster clients, kubectl, helm and the waits, on the e2e cluster too.
export { firstHost, NODE_NAME, nodeBinDir, POD_SUBNET_PREFIX, startNode } from "./node.ts";
export type { Node, NodeOptions } from "./node.ts";
export type { PodNetwork } from "./node-config.ts";
export { isPodFirewalled, KUBE_ROUTER_FORWARD_CHAIN, NETPOL_LOCK, netpolBinary } from "./network-policy.ts";
export { imagesDir, readBuiltImages, REQUIRED_IMAGES } from "./node-images.ts";
export type { BuiltImage } from "./node-images.ts";
export { buildSandboxPod, execInPod, runPod } from "./sandbox-pod.ts";
export type { ExecResult, SandboxPodSpec } from "./sandbox-pod.ts";
export type { NodeInfo } from "./provided-context.ts";
