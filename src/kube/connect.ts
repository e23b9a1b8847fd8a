import type { LibraryKubeClient } from "./client.ts";
import { createHttpsKubeClient, type HttpsKubeClient } from "./https-client.ts";
import { readKubeAccess } from "./kubeconfig.ts";

/** The client {@link connectKube} picks: on node:https (which opens pods/exec WebSockets itself), or over the library. */
export type ClusterClient = HttpsKubeClient | LibraryKubeClient;

/**
 * The client for `file` (else `~/.kube/config`, else the in-cluster account): on node:https when the kubeconfig
 * holds a token, a token file, client certificates or nothing, which keeps @kubernetes/client-node and its
 * generated model (about 80 MiB of RSS) out of the process; over the library only when the credentials need one of
 * its plugins (exec, auth-provider) or a proxy.
 */
export async function connectKube(file: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<ClusterClient> {
  const first = readKubeAccess(file, env);
  if (first.ok) {
    let last = first.access;
    return createHttpsKubeClient(() => {
      const again = readKubeAccess(file, env);
      // Rewritten to need a plugin meanwhile: keep the access that worked (a restart picks up the new kind).
      if (again.ok) last = again.access;
      return last;
    });
  }
  const { createKubeClient, loadKubeConfig } = await import("./client.ts");
  return createKubeClient(loadKubeConfig(file));
}
