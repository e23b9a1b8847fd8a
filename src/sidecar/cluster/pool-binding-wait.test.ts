import { describe, expect, it } from "vitest";
import { computeSnapshotDataSha256 } from "../../io/snapshot-digest.ts";
import type { KubeClient, WatchHandler } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { ANNOTATION } from "../../sandbox/names.ts";
import { waitForPoolBinding, type BindingWaitTiming } from "./pool-binding-wait.ts";

const POD = "notes-pool-0a1b2c3d4e";
const data = { "run-policy.json": "{}\n", "runtime.json": "{}\n", "controller.json": "{}\n" };
const annotations = { [ANNOTATION.boundRun]: "r1", [ANNOTATION.boundRunUid]: "uid-1" };
const checkedRun = { metadata: { name: "r1", uid: "uid-1" }, status: { enginePod: POD, startedFrom: "pool", snapshotSha256: computeSnapshotDataSha256(data) } };

/** The API server as the pool pod sees it: its pod, and the Run and snapshot once readable; each read and watch counted. */
function fakeCluster(watchable: boolean) {
  const state = { pod: { metadata: { name: POD, resourceVersion: "1", annotations: {} as Record<string, string> } }, run: undefined as unknown, cm: undefined as unknown };
  const gets: string[] = [];
  const watches: { query: Record<string, unknown>; emit: WatchHandler; end: () => void }[] = [];
  const client: KubeClient = {
    async request<T>(_method: string, path: string): Promise<T> {
      const name = path.split("/").pop()!;
      gets.push(name);
      const found = name === POD ? state.pod : name === "r1" ? state.run : name === "r1-policy" ? state.cm : undefined;
      if (found === undefined) throw new KubeApiError(403, "Forbidden", `${name}: forbidden`);
      return structuredClone(found) as T;
    },
    watch(_path, query, onEvent, signal) {
      if (!watchable) return Promise.reject(new KubeApiError(403, "Forbidden", "pods is forbidden: cannot watch"));
      return new Promise((resolve) => {
        const end = () => resolve();
        watches.push({ query: query ?? {}, emit: onEvent, end });
        signal.addEventListener("abort", end, { once: true });
        // Without a resourceVersion the server sends the pod as it is first.
        if (query?.["resourceVersion"] === undefined) onEvent("ADDED", structuredClone(state.pod));
      });
    },
  };
  const annotate = () => {
    state.pod = { metadata: { ...state.pod.metadata, resourceVersion: "2", annotations } };
    for (const w of watches) w.emit("MODIFIED", structuredClone(state.pod));
  };
  return { client, state, gets, watches, annotate };
}

const SLOW: BindingWaitTiming = { backstopMs: 60_000, pollMs: 60_000, recheckMs: 10, watchRetryMs: 60_000 };

function wait(cluster: ReturnType<typeof fakeCluster>, timing: BindingWaitTiming = SLOW) {
  const stop = new AbortController();
  const said: string[] = [];
  const done = waitForPoolBinding({ client: cluster.client, namespace: "ns", pod: POD, say: (l) => said.push(l), signal: stop.signal, timing });
  return { done, stop, said };
}

/** The Run, its snapshot and the pod's annotations, with no watch event: only a poll sees them. */
function bindQuietly(cluster: ReturnType<typeof fakeCluster>): void {
  cluster.state.run = checkedRun;
  cluster.state.cm = { data };
  cluster.state.pod.metadata.annotations = annotations;
}

const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

describe("waitForPoolBinding", () => {
  it("watches only its own pod by name, and checks the version the watch shows at once, with no poll", async () => {
    const cluster = fakeCluster(true);
    cluster.state.run = checkedRun;
    cluster.state.cm = { data };
    const w = wait(cluster);
    await tick();
    expect(cluster.watches.map((x) => x.query["fieldSelector"])).toEqual([`metadata.name=${POD}`]);
    cluster.annotate();
    await expect(w.done).resolves.toEqual({ ok: true, run: "r1", runUid: "uid-1", data, read: checkedRun });
    // Every version checked was the watch's (its first event is the pod as it was): the pod is never read apart.
    expect(cluster.gets.filter((g) => g === POD)).toHaveLength(0);
    expect(cluster.gets.filter((g) => g === "r1")).toHaveLength(1);
  });

  it("re-checks an annotated pod soon while the Run's Role and status follow, saying each refusal once", async () => {
    const cluster = fakeCluster(true);
    const w = wait(cluster);
    await tick();
    cluster.annotate();
    await tick(60);
    expect(w.said).toEqual(["binding refused, staying unbound: the Run 'r1' cannot be read"]);
    cluster.state.run = checkedRun;
    cluster.state.cm = { data };
    await expect(w.done).resolves.toMatchObject({ ok: true, run: "r1" });
  });

  it("polls as before while its Role does not let it watch, and binds from the poll", async () => {
    const cluster = fakeCluster(false);
    const w = wait(cluster, { ...SLOW, pollMs: 20 });
    await tick(50);
    expect(w.said[0]).toMatch(/^watching pod '.*' failed: pods is forbidden: cannot watch; polling every 20 ms until it is back$/);
    bindQuietly(cluster);
    await expect(w.done).resolves.toMatchObject({ ok: true, run: "r1" });
  });

  it("keeps a slow poll beside the watch, so a lost event never strands the pod", async () => {
    const cluster = fakeCluster(true);
    const w = wait(cluster, { ...SLOW, backstopMs: 50 });
    await tick();
    bindQuietly(cluster);
    await expect(w.done).resolves.toMatchObject({ ok: true, run: "r1" });
  });

  it("reopens a watch the server ends from the last version, and a failed one fresh", async () => {
    const cluster = fakeCluster(true);
    const w = wait(cluster, { ...SLOW, watchRetryMs: 5 });
    await tick();
    cluster.watches[0]!.end();
    await tick();
    expect(cluster.watches[1]!.query["resourceVersion"]).toBe("1");
    cluster.watches[1]!.emit("ERROR", { code: 410, message: "too old resource version" });
    await tick();
    expect(cluster.watches[2]!.query["resourceVersion"]).toBeUndefined();
    expect(w.said).toEqual([`the watch of pod '${POD}' ended with an error: too old resource version; polling every 60000 ms until it is back`]);
    w.stop.abort();
    await expect(w.done).resolves.toBeUndefined();
  });

  it("stops unbound when told to, and ends its watch", async () => {
    const cluster = fakeCluster(true);
    const w = wait(cluster);
    await tick();
    w.stop.abort();
    await expect(w.done).resolves.toBeUndefined();
    const before = cluster.gets.length;
    await tick(50);
    expect(cluster.gets.length).toBe(before);
  });
});
