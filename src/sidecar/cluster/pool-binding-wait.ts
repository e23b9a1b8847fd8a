// How an unbound pool pod's sidecar learns its binding (docs/controller.md, "Late binding, in the pod"): it watches
// its own pod (`fieldSelector=metadata.name=<pod>`, which the API server authorizes against the `watch` its Role
// grants on that one name) and checks each version it is shown. The controller annotates the pod before it binds
// the Run's Role and writes the Run's status, so an annotated pod whose binding does not check out yet is checked
// again soon, sooner at first. A watch that ends is reopened from the last version seen; one that fails is
// reopened fresh (its first event is the pod as it is now) after a pause. And a poll (a GET of the pod, as before
// the watch) stays: slow while the watch is up, so a lost event never strands a pod, fast while it is down (a
// pod whose Role predates the watch, an API server restart). The checks themselves are pool-binding.ts's.
import type { KubeClient } from "../../kube/client.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { readNamedBinding, readPoolBinding, type PodAnnotations, type PoolBinding } from "./pool-binding.ts";

/** How the wait paces itself (milliseconds); tests shorten them. */
export interface BindingWaitTiming {
  /** The poll while the watch is up: the backstop for a lost event. */
  readonly backstopMs: number;
  /** The poll while the watch is down (as often as the sidecar polled before it watched). */
  readonly pollMs: number;
  /** The first re-check of an annotated pod whose binding does not check out yet; each next one waits twice as long, up to `backstopMs`. */
  readonly recheckMs: number;
  /**
   * The pause before a failed watch is reopened (one the server ends sooner than this after it opened counts as
   * failed); it doubles on each failure in a row, up to `backstopMs`.
   */
  readonly watchRetryMs: number;
}

/** The default pace: an event is acted on at once; nothing here asks the API server more than a few times a second. */
export const BINDING_WAIT_TIMING: BindingWaitTiming = { backstopMs: 2000, pollMs: 250, recheckMs: 25, watchRetryMs: 250 };

/** How long the server keeps one watch open before the sidecar reopens it. */
const WATCH_TIMEOUT_SECONDS = 300;

/** What the wait needs: the pool pod's identity, where to say why a binding is refused, and the stop. */
export interface BindingWaitOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly pod: string;
  /** Told each refusal once (until another reason replaces it), and each way the watch failed. */
  readonly say: (line: string) => void;
  readonly signal: AbortSignal;
  readonly timing?: BindingWaitTiming;
}

type Checked = Extract<PoolBinding, { ok: true }>;
type PodEvent = { metadata?: { name?: string; annotations?: Record<string, string>; resourceVersion?: string } };

/** Resolves after `ms`, when `wake` is called, or when `signal` aborts, whichever is first. */
function pause(ms: number, signal: AbortSignal, waker: { wake: () => void }): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      waker.wake = () => {};
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    waker.wake = done;
  });
}

/**
 * Watches pod `pod` until `signal` aborts, handing each version to `seen` and saying whether the watch is up.
 * Never rejects: a failure is said, paused on (doubling) and followed by a fresh watch.
 */
async function watchOwnPod(opts: BindingWaitOptions, timing: BindingWaitTiming, seen: (annotations: PodAnnotations) => void, up: (isUp: boolean) => void): Promise<void> {
  const { client, namespace, pod, signal } = opts;
  const path = buildPath(RESOURCES.pod, namespace);
  let resourceVersion: string | undefined;
  let retry = timing.watchRetryMs;
  let said = "";
  while (!signal.aborted) {
    const own = new AbortController();
    const end = () => own.abort();
    signal.addEventListener("abort", end, { once: true });
    let failure: string | undefined;
    const opened = Date.now();
    try {
      // Without a resourceVersion the server first sends the pod as it is now (ADDED): the watch's own GET.
      await client.watch(path, { fieldSelector: `metadata.name=${pod}`, allowWatchBookmarks: true, timeoutSeconds: WATCH_TIMEOUT_SECONDS, ...(resourceVersion ? { resourceVersion } : {}) }, (type, object) => {
        if (own.signal.aborted) return;
        if (type === "ERROR") {
          failure = `the watch of pod '${pod}' ended with an error: ${(object as { message?: string } | undefined)?.message ?? "no message"}`;
          own.abort();
          return;
        }
        const event = object as PodEvent | undefined;
        resourceVersion = event?.metadata?.resourceVersion ?? resourceVersion;
        retry = timing.watchRetryMs;
        up(true);
        if ((type === "ADDED" || type === "MODIFIED") && event?.metadata?.name === pod) seen(event.metadata.annotations);
      }, own.signal);
    } catch (err) {
      if (!signal.aborted) failure = `watching pod '${pod}' failed: ${(err as Error).message}`;
    } finally {
      signal.removeEventListener("abort", end);
    }
    if (signal.aborted) break;
    // A watch the server ends is reopened from the last version at once, unless it ended as soon as it opened.
    if (failure === undefined && Date.now() - opened >= timing.watchRetryMs) continue;
    failure ??= `the watch of pod '${pod}' ended as soon as it opened`;
    up(false);
    resourceVersion = undefined;
    if (failure !== said) opts.say(`${failure}; polling every ${timing.pollMs} ms until it is back`);
    said = failure;
    await pause(retry, signal, { wake: () => {} });
    retry = Math.min(retry * 2, timing.backstopMs);
  }
}

/**
 * Waits until the pod's binding checks out (resolves it) or `signal` aborts (resolves undefined). Each version of the
 * pod the watch shows is checked at once; a refused binding stays unbound and is said once per reason.
 */
export async function waitForPoolBinding(opts: BindingWaitOptions): Promise<Checked | undefined> {
  const { client, namespace, pod, signal } = opts;
  const timing = opts.timing ?? BINDING_WAIT_TIMING;
  const waker = { wake: () => {} };
  // The version the watch showed last and not yet checked (taken by the loop), and whether the watch is up.
  const feed = { shown: undefined as { annotations: PodAnnotations } | undefined, watching: false };
  const take = () => {
    const shown = feed.shown;
    feed.shown = undefined;
    return shown;
  };
  const stopWatch = new AbortController();
  const stop = () => stopWatch.abort();
  signal.addEventListener("abort", stop, { once: true });
  const watched = watchOwnPod({ ...opts, signal: stopWatch.signal }, timing, (annotations) => {
    feed.shown = { annotations };
    waker.wake();
  }, (isUp) => void (feed.watching = isUp));
  let said = "";
  let recheck = timing.recheckMs;
  try {
    while (!signal.aborted) {
      const shown = take();
      // A new version of the pod is checked as it was shown; the poll and the re-checks read it again.
      if (shown !== undefined) recheck = timing.recheckMs;
      const read = shown === undefined ? readPoolBinding(client, namespace, pod) : readNamedBinding(client, namespace, pod, shown.annotations);
      const binding = await read.catch((err: unknown) => ({ ok: false as const, reason: `reading the binding failed: ${(err as Error).message}` }));
      if (binding?.ok) return binding;
      if (binding !== undefined && binding.reason !== said) {
        said = binding.reason;
        opts.say(`binding refused, staying unbound: ${binding.reason}`);
      }
      if (feed.shown !== undefined) continue;
      // A pod that names a Run (or could not be read) is re-checked soon, then less often: its Role and the
      // Run's status follow the annotations. Otherwise the poll: the backstop while the watch is up.
      const wait = binding !== undefined ? recheck : feed.watching ? timing.backstopMs : timing.pollMs;
      if (binding !== undefined) recheck = Math.min(recheck * 2, timing.backstopMs);
      await pause(wait, signal, waker);
    }
    return undefined;
  } finally {
    signal.removeEventListener("abort", stop);
    stopWatch.abort();
    await watched;
  }
}
