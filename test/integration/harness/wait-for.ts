import type { KubernetesObject } from "@kubernetes/client-node";
import { testCluster } from "./test-cluster.ts";
import type { TestCluster } from "./test-cluster.ts";

/** How long and how often {@link waitFor} polls. */
export type WaitOptions = { timeoutMs?: number; intervalMs?: number; description?: string };

type Falsy = undefined | null | false;

/**
 * Polls `fn` until it returns a value other than undefined, null or false, and returns that value.
 * A throwing `fn` counts as "not yet"; its last error is in the timeout message.
 */
export async function waitFor<T>(fn: () => Promise<T | Falsy> | T | Falsy, opts: WaitOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const intervalMs = opts.intervalMs ?? 200;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const last = lastError === undefined ? "" : `; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.description ?? "a condition"}${last}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A status condition as the API conventions define it. */
export type Condition = { type: string; status: string; reason?: string; message?: string };

/** The condition of `type` in `obj.status.conditions`, if any. */
export function findCondition(obj: object, type: string): Condition | undefined {
  const status = (obj as { status?: { conditions?: Condition[] } }).status;
  return status?.conditions?.find((c) => c.type === type);
}

/** The object reference {@link waitForCondition} re-reads: kind, apiVersion, name and (if namespaced) namespace. */
export type ObjectRef = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

/** Re-reads `ref` until its condition `type` has `status`; returns the object as last read. */
export async function waitForCondition<T extends KubernetesObject = KubernetesObject>(
  ref: ObjectRef, type: string, status: "True" | "False" | "Unknown" = "True",
  opts: WaitOptions & { cluster?: TestCluster } = {},
): Promise<T> {
  const cluster = opts.cluster ?? testCluster();
  const name = `${ref.kind} ${ref.metadata.namespace ? `${ref.metadata.namespace}/` : ""}${ref.metadata.name}`;
  return waitFor(async () => {
    const obj = await cluster.objects.read<T>(ref as T & ObjectRef);
    return findCondition(obj, type)?.status === status ? obj : undefined;
  }, { description: `${name} to have condition ${type}=${status}`, ...opts });
}
