// A pool pod's sidecar (docs/controller.md, "Warm pools"; docs/security.md, "Warm pools") starts with no run and
// refuses every call. Its binding arrives as annotations on its own pod, which anyone who may patch pods can write,
// so they only say where to look: the Run they name must carry the annotated uid, its controller-written status
// must name this pod as its engine pod started from the pool, and the start snapshot `<run>-policy` must hash to
// the Run's `status.snapshotSha256`, the digest the controller checks a cold Run's snapshot against. Any mismatch
// fails closed: the pod stays unbound. The sidecar reads the Run and the snapshot with the Role the controller
// binds to the pod's ServiceAccount at adoption; before that, it can read nothing but its own pod.
import { computeSnapshotDataSha256 } from "../../io/snapshot-digest.ts";
import type { KubeClient } from "../../kube/client.ts";
import { isApiStatus } from "../../kube/errors.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { ANNOTATION, buildChildNames } from "../../sandbox/names.ts";
import { SNAPSHOT_KEY } from "../../sandbox/run-snapshot.ts";

/** What the sidecar reads to bind: its own pod's annotations, then the Run and the snapshot they name. */
export interface PoolBindingInput {
  readonly podName: string;
  readonly annotations: Readonly<Record<string, string>> | undefined;
  readonly run: { metadata?: { name?: string; uid?: string }; status?: { enginePod?: string; startedFrom?: string; snapshotSha256?: string } } | undefined;
  readonly snapshot: Readonly<Record<string, string>> | undefined;
}

/**
 * A checked binding: the Run, and its snapshot's data (run-policy.json, runtime.json, controller.json),
 * digest-checked; `read`, the Run as the check read it, which the Run's sidecar takes over with (its audit ledger,
 * result and warnings: cli/sidecar-cluster.ts) rather than read it again.
 */
export type PoolBinding = { readonly ok: true; readonly run: string; readonly runUid: string; readonly data: Readonly<Record<string, string>>; readonly read: unknown } | { readonly ok: false; readonly reason: string };

/** The Run a pool pod's annotations name, if any (undefined: not bound yet). */
export function readBoundRun(annotations: Readonly<Record<string, string>> | undefined): { name: string; uid: string } | undefined {
  const name = annotations?.[ANNOTATION.boundRun];
  const uid = annotations?.[ANNOTATION.boundRunUid];
  return name && uid ? { name, uid } : undefined;
}

/** Why the Run read is not the one bound to this pod (undefined: it is). */
function checkRun(podName: string, bound: { name: string; uid: string }, run: PoolBindingInput["run"]): string | undefined {
  if (run === undefined) return `the Run '${bound.name}' cannot be read`;
  if (run.metadata?.uid !== bound.uid) return `the Run '${bound.name}' is not the one the pod was bound to (uid ${run.metadata?.uid ?? "none"}, annotated ${bound.uid})`;
  const status = run.status;
  if (status?.enginePod !== podName || status.startedFrom !== "pool") {
    return `the Run '${bound.name}' does not name this pod as its engine pod started from the pool (status.enginePod '${status?.enginePod ?? ""}', startedFrom '${status?.startedFrom ?? ""}')`;
  }
  if (status.snapshotSha256 === undefined) return `the Run '${bound.name}' has no status.snapshotSha256 yet`;
  return undefined;
}

/** Why the snapshot read is not the one the Run pins (undefined: it is). */
function checkSnapshot(name: string, snapshot: PoolBindingInput["snapshot"], sha256: string): string | undefined {
  if (snapshot === undefined) return `the snapshot '${name}' cannot be read`;
  if (computeSnapshotDataSha256(snapshot) !== sha256) return `the snapshot '${name}' does not hash to the Run's status.snapshotSha256`;
  const missing = Object.values(SNAPSHOT_KEY).find((key) => snapshot[key] === undefined);
  return missing === undefined ? undefined : `the snapshot '${name}' has no ${missing}`;
}

/** Whether what was read binds this pod to the Run its annotations name; every mismatch is a refusal that says which. */
export function checkPoolBinding(input: PoolBindingInput): PoolBinding {
  const bound = readBoundRun(input.annotations);
  if (bound === undefined) return { ok: false, reason: "the pod names no Run (annotations leviath.dev/bound-run and bound-run-uid)" };
  const why = checkRun(input.podName, bound, input.run) ?? checkSnapshot(buildChildNames(bound.name).configMap, input.snapshot, input.run?.status?.snapshotSha256 ?? "");
  if (why !== undefined || input.snapshot === undefined) return { ok: false, reason: why ?? "no snapshot" };
  return { ok: true, run: bound.name, runUid: bound.uid, data: input.snapshot, read: input.run };
}

/** GET that answers undefined for 403 and 404: before the controller bound its Role, the sidecar may read nothing. */
async function getOrUndefined<T>(client: KubeClient, path: string): Promise<T | undefined> {
  try {
    return await client.request<T>("GET", path);
  } catch (err) {
    if (isApiStatus(err, 403) || isApiStatus(err, 404)) return undefined;
    throw err;
  }
}

/** The pod's annotations as the API server returned them (a GET, or an event of the watch of the pod). */
export type PodAnnotations = Readonly<Record<string, string>> | undefined;

/**
 * Reads the Run and the snapshot that `annotations` (the pod's, as the API server returned them) name, both at once,
 * and checks them (undefined: the pod names no Run yet).
 */
export async function readNamedBinding(client: KubeClient, namespace: string, podName: string, annotations: PodAnnotations): Promise<PoolBinding | undefined> {
  const bound = readBoundRun(annotations);
  if (bound === undefined) return undefined;
  const [run, cm] = await Promise.all([
    getOrUndefined<PoolBindingInput["run"]>(client, buildPath(RESOURCES.run, namespace, bound.name)),
    getOrUndefined<{ data?: Record<string, string> }>(client, buildPath(RESOURCES.configMap, namespace, buildChildNames(bound.name).configMap)),
  ]);
  return checkPoolBinding({ podName, annotations, run, snapshot: cm?.data });
}

/** Reads the pod, and once it names a Run, the Run and its snapshot, and checks them (undefined: not bound yet). */
export async function readPoolBinding(client: KubeClient, namespace: string, podName: string): Promise<PoolBinding | undefined> {
  const pod = await client.request<{ metadata?: { annotations?: Record<string, string> } }>("GET", buildPath(RESOURCES.pod, namespace, podName));
  return readNamedBinding(client, namespace, podName, pod.metadata?.annotations);
}
