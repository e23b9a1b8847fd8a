// What the e2e project's global setup hands to the tests through vitest's provide/inject, besides the
// integration harness's `kubeconfig` and `binDir` (so its helpers work unchanged on this cluster).
import type {} from "../../integration/harness/provided-context.ts";
import type { PodNetwork } from "./node-config.ts";

/** The running node, as the tests see it. */
export type NodeInfo = {
  name: string;
  dataDir: string;
  /** containerd's socket (for `ctr`, namespace k8s.io). */
  containerdSocket: string;
  cgroupRoot: string;
  /** Image references by name: `pause`, `sandbox`, and any other image scripts/build-images made. */
  images: Record<string, string>;
  network: PodNetwork;
  /** kube-router's firewall enforces NetworkPolicy on this node. */
  networkPolicy: boolean;
  /** The kubelet's HTTPS port on 127.0.0.1. */
  kubeletPort: number;
};

declare module "vitest" {
  export interface ProvidedContext {
    node: NodeInfo;
    /** Set (to the reason) only when this run cannot start a node: every e2e test is then skipped. */
    e2eUnavailable?: string;
  }
}

export {};
