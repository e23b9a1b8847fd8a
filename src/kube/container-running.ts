// Before a pods/exec: the target container must be running. An exec into a pod whose container is still being
// created is refused by the kubelet (the API server relays it as `Unexpected server response: 500`), and the
// sidecar starts beside its sandbox pods, so its first exec can race them. Reading the pod (the sidecar's Role
// may `get` exactly its Run's pods) says when the container runs, or why it never will.
import type { KubeClient } from "./client.ts";
import { isApiStatus } from "./errors.ts";
import { buildPath, RESOURCES } from "./resources.ts";

/** How long an exec waits for its container by default: a Run's default `sandboxReadySeconds`, past which the controller fails it. */
export const DEFAULT_CONTAINER_WAIT_MS = 300_000;
/** How often the pod is read while it is not running yet. */
const POLL_MS = 500;

type ContainerState = { running?: object; waiting?: { reason?: string; message?: string }; terminated?: { reason?: string; exitCode?: number } };
/** The fields of a Pod the wait reads. */
interface PodView {
  metadata?: { deletionTimestamp?: string };
  spec?: { containers?: { name: string }[]; nodeName?: string };
  status?: { phase?: string; containerStatuses?: { name: string; state?: ContainerState }[] };
}

/** The container a wait is for. */
export interface ContainerRef {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
}

/** Options of one wait. */
export interface ContainerWait {
  readonly timeoutMs: number;
  readonly intervalMs?: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Where a pod stands for one container: running, still coming (and why), or never going to run (and why). */
export function readContainerState(pod: PodView, container: string): { running: true } | { waiting: string } | { never: string } {
  const never = whyNever(pod, container);
  if (never !== undefined) return { never };
  const phase = pod.status?.phase ?? "Pending";
  const state = pod.status?.containerStatuses?.find((c) => c.name === container)?.state;
  if (state?.running !== undefined) return { running: true };
  if (phase === "Succeeded" || phase === "Failed") return { never: `the pod is ${phase}` };
  return { waiting: describeWaiting(state) ?? (pod.spec?.nodeName === undefined ? "Pending, not scheduled to a node yet" : phase) };
}

/** Why the pod, whatever its containers' state, will never run the container; `undefined` when it may. */
function whyNever(pod: PodView, container: string): string | undefined {
  if (pod.metadata?.deletionTimestamp !== undefined) return "the pod is being deleted";
  if (pod.spec?.containers !== undefined && !pod.spec.containers.some((c) => c.name === container)) return "the pod has no such container";
  return undefined;
}

/** Why a container that is not running yet still waits, from its own state; `undefined` when it has none. */
function describeWaiting(state: ContainerState | undefined): string | undefined {
  if (state?.terminated !== undefined) return `terminated (${state.terminated.reason ?? `exit code ${state.terminated.exitCode ?? "unknown"}`}), restarting`;
  if (state?.waiting !== undefined) return `waiting: ${state.waiting.reason ?? "unknown"}${state.waiting.message ? ` (${state.waiting.message})` : ""}`;
  return undefined;
}

/** Resolves once the container runs; rejects, naming the pod and the container, when it never will or the bound passes. */
export async function waitForContainerRunning(client: Pick<KubeClient, "request">, target: ContainerRef, opts: ContainerWait): Promise<void> {
  const { namespace, pod, container } = target;
  const now = opts.now ?? Date.now;
  // The wait's timer never keeps the process alive by itself: a sidecar told to stop while a channel's opening waits
  // for a sandbox pod that never comes (a Run cancelled before it) exits, rather than at the end of the wait.
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref()));
  const deadline = now() + opts.timeoutMs;
  const who = `container '${container}' of pod '${namespace}/${pod}'`;
  let last = "not read yet";
  for (;;) {
    try {
      const state = readContainerState(await client.request<PodView>("GET", buildPath(RESOURCES.pod, namespace, pod)), container);
      if ("running" in state) return;
      if ("never" in state) throw new Error(`${who} will not run: ${state.never}`);
      last = state.waiting;
    } catch (err) {
      // A pod not created yet is the same race; anything else (forbidden, a bad request) will not change by waiting.
      if (!isApiStatus(err, 404)) throw err instanceof Error && err.message.startsWith(who) ? err : new Error(`${who}: reading the pod failed: ${(err as Error).message}`);
      last = "the pod does not exist yet";
    }
    if (now() >= deadline) throw new Error(`${who} is not running after ${Math.round(opts.timeoutMs / 1000)} s (${last})`);
    await sleep(Math.min(opts.intervalMs ?? POLL_MS, Math.max(0, deadline - now())));
  }
}
