// pods/exec for the sidecar's executors (shell, stdio MCP servers), started only once the target container runs
// (container-running.ts). Over the node:https client it speaks the API server's WebSocket channel protocol itself
// (exec-channel.ts) with the client's TLS material and credentials, so the in-cluster sidecar loads nothing of
// @kubernetes/client-node; a kubeconfig that needs one of the library's plugins keeps the library's Exec, imported
// on the first exec. The executors in sidecar/ take this as a port.
import type { Readable, Writable } from "node:stream";
import type { LibraryKubeClient } from "./client.ts";
import type { ClusterClient } from "./connect.ts";
import { DEFAULT_CONTAINER_WAIT_MS, waitForContainerRunning } from "./container-running.ts";
import { buildExecPath, openExecChannel, type ExecStatus, type ExecStream } from "./exec-channel.ts";

export type { ExecStatus, ExecStream } from "./exec-channel.ts";

/** The one call the executors need (the signature of client-node's `Exec.exec`). */
export interface PodExec {
  exec(
    namespace: string, pod: string, container: string, command: string | string[], stdout: Writable | null, stderr: Writable | null,
    stdin: Readable | null, tty: boolean, statusCallback?: (status: ExecStatus) => void,
  ): Promise<ExecStream>;
}

/** An exec client for the client's cluster that waits (at most `waitMs`) for the target container to run first. */
export function createPodExec(client: ClusterClient, waitMs: number = DEFAULT_CONTAINER_WAIT_MS): PodExec {
  // The nine positional parameters are client-node's `Exec.exec`, which this stands in for (libraryExec is that very call).
  // eslint-disable-next-line max-params
  const open: PodExec["exec"] = "config" in client ? libraryExec(client) : (namespace, pod, container, command, stdout, stderr, stdin, tty, statusCallback) => {
    const path = buildExecPath({ namespace, pod, container, command, stdin: stdin !== null, stdout: stdout !== null, stderr: stderr !== null, tty });
    return openExecChannel(client.upgradeTarget(path), { stdout, stderr, stdin, ...(statusCallback ? { onStatus: statusCallback } : {}) });
  };
  return {
    async exec(namespace, pod, container, ...rest) {
      await waitForContainerRunning(client, { namespace, pod, container }, { timeoutMs: waitMs });
      return open(namespace, pod, container, ...rest);
    },
  };
}

/** client-node's Exec, for credentials only the library can use; the library is loaded with that client already. */
function libraryExec(client: LibraryKubeClient): PodExec["exec"] {
  let exec: Promise<{ exec: PodExec["exec"] }> | undefined;
  return async (...args) => {
    exec ??= import("@kubernetes/client-node").then(({ Exec }) => new Exec(client.config));
    return (await exec).exec(...args);
  };
}
