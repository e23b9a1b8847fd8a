// Load for the controller bench: Runs created on a fixed schedule or in parallel batches, and a tracker that
// watches the Runs' children arrive. Times are `performance.now()` of this process: a Run counts as created when
// the API server's answer to its POST arrives, its children as created when the watch delivers the last of them.
// Both include this process's own delays, so the latency is an upper bound of the controller's.
import type { BenchKube, WatchedObject } from "./bench-kube.ts";

const CHILD_PATHS = [
  "/api/v1/namespaces/{ns}/pods",
  "/api/v1/namespaces/{ns}/configmaps",
  "/api/v1/namespaces/{ns}/serviceaccounts",
  "/api/v1/namespaces/{ns}/persistentvolumeclaims",
  "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
  "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
  "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
];

/** The Agent every timed Run uses: an engine pod and two sandbox pods, one closed network (the integration test's). */
export const BENCH_AGENT = {
  // The controller's default runtime image (startControllerChild), the only one the default ceiling allows.
  image: "registry.example/runtime:bench",
  sandbox: { kind: "container", image: "debian:bookworm-slim", network: false },
  readPaths: { allow: ["/data/design"] },
  stages: [{ name: "survey" }, { name: "build", sandbox: { kind: "container", image: "node:22-slim" } }, { name: "digest" }],
};
/** The cluster policy of the controller benches. */
export const BENCH_POLICY = { sandbox: { kind: "container", image: "debian:bookworm-slim", onUnavailable: "error" }, security: { taintTracking: true } };

/** The Runs path of a namespace. */
export const runsPath = (ns: string) => `/apis/leviath.dev/v1alpha1/namespaces/${ns}/runs`;

/** Which children a tracker follows: the owner kind and the watched paths (`{ns}` for the namespace), with an optional label selector. */
export interface TrackedChildren {
  readonly ownerKind: string;
  readonly paths: readonly string[];
  readonly labelSelector?: string;
}

/** Our Runs' children: everything the controller labels as managed by it. */
export const RUN_CHILDREN: TrackedChildren = { ownerKind: "Run", paths: CHILD_PATHS, labelSelector: "app.kubernetes.io/managed-by=leviath-operator" };

/** Follows every child of every owner (a Run, by default) in a namespace as the watches deliver them. */
export class ChildTracker {
  /** Children seen per Run. */
  readonly count = new Map<string, number>();
  /** When the Run's `expected`-th child arrived. */
  readonly doneAt = new Map<string, number>();
  /** When the latest child of the Run arrived. */
  readonly lastAt = new Map<string, number>();
  /** When the owner's first Pod arrived. */
  readonly firstPodAt = new Map<string, number>();
  expected = Infinity;
  readonly #seen = new Set<string>();
  readonly #watches: { stop(): void }[] = [];
  readonly #ownerKind: string;

  constructor(kube: BenchKube, ns: string, children: TrackedChildren = RUN_CHILDREN) {
    this.#ownerKind = children.ownerKind;
    const query = children.labelSelector ? `?labelSelector=${encodeURIComponent(children.labelSelector)}` : "";
    for (const path of children.paths) this.#watches.push(kube.watch(`${path.replace("{ns}", ns)}${query}`, (type, obj, at) => this.#onEvent(type, obj, at)));
  }

  #onEvent(type: string, obj: WatchedObject, atMs: number): void {
    if (type !== "ADDED") return;
    const owner = obj.metadata.ownerReferences?.find((r) => r.controller && r.kind === this.#ownerKind);
    if (!owner) return;
    const key = `${obj.kind}/${obj.metadata.name}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    const n = (this.count.get(owner.name) ?? 0) + 1;
    this.count.set(owner.name, n);
    this.lastAt.set(owner.name, atMs);
    if (obj.kind === "Pod" && !this.firstPodAt.has(owner.name)) this.firstPodAt.set(owner.name, atMs);
    if (n === this.expected) this.doneAt.set(owner.name, atMs);
  }

  /** How many of `runs` have all their children. */
  completed(runs: readonly string[]): number {
    return runs.filter((r) => this.doneAt.has(r)).length;
  }

  stop(): void {
    for (const w of this.#watches) w.stop();
  }
}

/** A Run object for `agent`. */
export function buildRun(name: string, agent: string): Record<string, unknown> {
  return { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name }, spec: { agentRef: { name: agent }, task: "benchmark" } };
}

/** What creating one Run observed. */
export interface CreatedRun {
  readonly name: string;
  /** When the POST was sent, and when its answer arrived. */
  readonly sentAt: number;
  readonly createdAt: number;
}

/** Creates `names` at `perSecond`, on schedule whatever the answers do (an open loop); resolves once all answered. */
export function createRunsAtRate(kube: BenchKube, ns: string, names: readonly string[], agent: string, perSecond: number): Promise<CreatedRun[]> {
  return createAtRate(kube, runsPath(ns), names, (name) => buildRun(name, agent), perSecond);
}

/** Posts `build(name)` to `path` for each of `names` at `perSecond`, as an open loop; resolves once all answered. */
export async function createAtRate(kube: BenchKube, path: string, names: readonly string[], build: (name: string) => unknown, perSecond: number): Promise<CreatedRun[]> {
  const start = performance.now();
  const out: Promise<CreatedRun>[] = [];
  for (let i = 0; i < names.length; i++) {
    const due = start + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const name = names[i]!;
    const sentAt = performance.now();
    out.push(kube.call("POST", path, build(name)).then(() => ({ name, sentAt, createdAt: performance.now() })));
  }
  return Promise.all(out);
}

/** Creates `names` with `concurrency` requests in flight, as fast as the API server answers. */
export async function createRunsInParallel(kube: BenchKube, ns: string, names: readonly string[], agent: string, concurrency: number): Promise<CreatedRun[]> {
  const out: CreatedRun[] = [];
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const name = names[next++]!;
      const sentAt = performance.now();
      await kube.call("POST", runsPath(ns), buildRun(name, agent));
      out.push({ name, sentAt, createdAt: performance.now() });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out.sort((a, b) => a.sentAt - b.sentAt);
}

/** `prefix-00000` … names. */
export function runNames(prefix: string, count: number, from = 0): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(from + i).padStart(5, "0")}`);
}
