// What every `kubectl leviath` command gets: the API client for the user's kubeconfig, context and namespace, and
// the clock and sleep it waits with (injected, so the waits are testable).
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import type { RunStatus } from "../../api/status.ts";
import type { CliIo } from "../io.ts";

/** The world a plugin command runs in. */
export interface PluginContext {
  readonly io: CliIo;
  readonly client: KubeClient;
  /** `-n/--namespace`, else the context's namespace, else `default`. */
  readonly namespace: string;
  nowMs(): number;
  sleep(ms: number): Promise<void>;
}

/** A failure the command explains in one line and exits 1 for (a missing Run, a prompt not pending, a timeout). */
export class PluginFailure extends Error {
  override readonly name = "PluginFailure";
}

/** A Run as the plugin reads it. */
export interface RunObject {
  metadata: { name: string; namespace: string; uid: string; creationTimestamp?: string };
  status?: RunStatus;
}

/** Reads Run `name`; a missing one is a {@link PluginFailure} that names the namespace. */
export async function getRun(ctx: PluginContext, name: string): Promise<RunObject> {
  try {
    return await ctx.client.request<RunObject>("GET", buildPath(RESOURCES.run, ctx.namespace, name));
  } catch (err) {
    if (err instanceof KubeApiError && err.code === 404) throw new PluginFailure(`run '${name}' not found in namespace '${ctx.namespace}'`);
    throw err;
  }
}
