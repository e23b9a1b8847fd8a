// pods/exec for the sidecar's shell executor: client-node's Exec over the API server's websocket. Kept here
// because only kube/ may import the client at runtime; the executor in sidecar/ takes this as a port.
import { Exec, type KubeConfig } from "@kubernetes/client-node";

/** The one call the sidecar needs: client-node's `Exec.exec`. */
export type PodExec = Pick<Exec, "exec">;

/** An exec client for the kubeconfig's current context. */
export function createPodExec(config: KubeConfig): PodExec {
  return new Exec(config);
}
