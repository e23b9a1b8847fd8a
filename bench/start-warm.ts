// The start bench's warm mode (issue 32): a LeviathPolicy pool for the bench's Agent, kept by the controller child
// started with --warm-pools, and the workspace volumes its pool pods' claims need. The node here has no storage
// provisioner, so each pool claim gets a hostPath PersistentVolume pre-bound to it as it appears, as each cold Run's
// claim gets one before the Run is created (the bench's stand-in for a provisioner, in both modes).
import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { BenchKube, WatchedObject } from "./bench-kube.ts";
import { until } from "./controller-cluster.ts";

type Claim = WatchedObject & { metadata: { labels?: Record<string, string> }; spec?: { volumeName?: string } };
type PodList = { items: { metadata: { labels?: Record<string, string> }; status?: { conditions?: { type: string; status: string }[] } }[] };

/** A hostPath PersistentVolume bound ahead to claim `claim` in `ns`, backed by a fresh directory under `dir`. */
export function buildClaimVolume(ns: string, claim: string, dir: string): Record<string, unknown> {
  const path = join(dir, claim);
  mkdirSync(path, { recursive: true });
  chmodSync(path, 0o777);
  return {
    apiVersion: "v1", kind: "PersistentVolume", metadata: { name: `${ns}-${claim}` },
    spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], storageClassName: "", hostPath: { path, type: "Directory" }, claimRef: { namespace: ns, name: claim } },
  };
}

/** Gives every pool pod's workspace claim in `ns` its volume as the claim appears; `stop` ends the watch. */
export function provisionPoolClaims(kube: BenchKube, ns: string, dir: string): { stop(): void } {
  const done = new Set<string>();
  return kube.watch(`/api/v1/namespaces/${ns}/persistentvolumeclaims?labelSelector=leviath.dev/pool`, (type, obj) => {
    const claim = obj as Claim;
    if (type !== "ADDED" || done.has(claim.metadata.name) || claim.spec?.volumeName) return;
    done.add(claim.metadata.name);
    void kube.call("POST", "/api/v1/persistentvolumes", buildClaimVolume(ns, claim.metadata.name, dir), [409]);
  });
}

/**
 * The scripted runtime's command (the leviath-runtime image's entrypoint): a pool pod names its runtime itself, since
 * a pod cannot read its image's entrypoint (docs/controller.md, Declaring a pool).
 */
const RUNTIME_COMMAND = ["/usr/local/bin/node", "/opt/leviath-runtime/runtime.mjs"];

/**
 * Declares (or, with size 0, empties) the pool of Agent `ns/agent` on the LeviathPolicy `cluster`; `runtimeStart`,
 * when the scripted runtime starts (with-pod: held on its binding, which it reads as a third-party runtime would).
 */
export async function setPool(kube: BenchKube, ns: string, agent: string, size: number, runtimeStart = "with-pod"): Promise<void> {
  const path = "/apis/leviath.dev/v1alpha1/leviathpolicies/cluster";
  const policy = await kube.call<{ spec: Record<string, unknown> }>("GET", path);
  policy.spec["pools"] = size > 0 ? [{ agent: `${ns}/${agent}`, size, command: RUNTIME_COMMAND, runtimeStart }] : [];
  await kube.call("PUT", path, policy);
}

type PoolPod = PodList["items"][number] & WatchedObject;

/**
 * The pool's unbound pods of Agent `ns/agent` as a watch shows them (no polling: the API server's requests and CPU
 * per Run the bench reports are the operator's and the pool's, not the bench's own LISTs). A pod adopted by a Run
 * leaves the selector, which the watch tells as a deletion.
 */
export function watchPool(kube: BenchKube, ns: string, agent: string): { readonly pods: ReadonlyMap<string, PoolPod>; stop(): void } {
  const pods = new Map<string, PoolPod>();
  const w = kube.watch(`/api/v1/namespaces/${ns}/pods?labelSelector=leviath.dev/pool%3D${agent},leviath.dev/pool-state%3Dready`, (type, obj) => {
    if (type === "DELETED") pods.delete(obj.metadata.name);
    else if (type === "ADDED" || type === "MODIFIED") pods.set(obj.metadata.name, obj as PoolPod);
  });
  return { pods, stop: () => w.stop() };
}

/**
 * How many of the pool's engine pods are unbound and Ready, counted only once every unbound pod of the pool (its
 * sandbox pods too, made beside each engine pod) is Ready: a Run created before would wait for one of them.
 */
function countReady(pods: Iterable<PoolPod>): number {
  const all = [...pods];
  const ready = (p: PoolPod) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
  if (!all.every(ready)) return 0;
  return all.filter((p) => p.metadata.labels?.["leviath.dev/component"] === "engine").length;
}

/** Waits until the watched pool has `size` ready pods (a Run created then is served warm). */
export async function waitForPool(pool: { readonly pods: ReadonlyMap<string, PoolPod> }, size: number): Promise<void> {
  await until(() => countReady(pool.pods.values()) >= size, `${size} ready pool pods`, 300_000, 10);
}
