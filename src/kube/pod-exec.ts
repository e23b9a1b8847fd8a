// pods/exec for the sidecar's executors (shell, stdio MCP servers): client-node's Exec over the API server's
// websocket, started only once the target container runs (container-running.ts). Kept here because only kube/
// may import the client at runtime; the executors in sidecar/ take this as a port.
import { Exec } from "@kubernetes/client-node";
import type { LibraryKubeClient } from "./client.ts";
import { DEFAULT_CONTAINER_WAIT_MS, waitForContainerRunning } from "./container-running.ts";

/** The one call the sidecar needs: client-node's `Exec.exec`. */
export type PodExec = Pick<Exec, "exec">;

/** An exec client for the client's cluster that waits (at most `waitMs`) for the target container to run first. */
export function createPodExec(client: LibraryKubeClient, waitMs: number = DEFAULT_CONTAINER_WAIT_MS): PodExec {
  const inner = new Exec(client.config);
  return {
    async exec(namespace, pod, container, ...rest) {
      await waitForContainerRunning(client, namespace, pod, container, { timeoutMs: waitMs });
      return inner.exec(namespace, pod, container, ...rest);
    },
  };
}
