// The informer's list in pages, against the real API server: more objects than one page are all cached, a change
// made while the pages are read (after the first, before the last) arrives by the watch, which starts from the
// list's resource version. Over an API server reading etcd directly: a continue token whose version etcd compacted
// meanwhile (410 Expired) lists again from the first page, a watch from a compacted version (410 Gone) lists again in
// pages, and what the new snapshot lacks is deleted.
// The client under the informer is the real one (connectKube), wrapped only to record what was asked and answered,
// to run the test's writes at the moments named.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectKube } from "../../../src/kube/connect.ts";
import type { KubeClient } from "../../../src/kube/client.ts";
import { createInformer, type InformerEvent } from "../../../src/kube/informer.ts";
import { RESOURCES } from "../../../src/kube/resources.ts";
import type { CoreV1Api } from "@kubernetes/client-node";
import { createRestrictedNamespace, createTestCluster, deleteNamespace, startControlPlane, testCluster, waitFor, type ControlPlane } from "../harness/index.ts";

/** Compacts etcd's history up to its current revision (what kube-apiserver does every five minutes), physically. */
async function compactEtcd(etcdUrl: string): Promise<void> {
  const range = await fetch(`${etcdUrl}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: Buffer.from("/").toString("base64") }) });
  const revision = ((await range.json()) as { header: { revision: string } }).header.revision;
  const compacted = await fetch(`${etcdUrl}/v3/kv/compaction`, { method: "POST", body: JSON.stringify({ revision, physical: true }) });
  if (!compacted.ok) throw new Error(`etcd compaction at ${revision}: ${compacted.status} ${await compacted.text()}`);
}

type Query = Record<string, string | number | boolean | undefined>;
type Page = { query: Query; resourceVersion?: string; continue?: string; items: number };

/** The real client, recording each list page and each watch's query; `beforeWatch` runs before each watch is sent. */
function recording(client: KubeClient, hooks: { afterFirstPage?: () => Promise<void>; beforeWatch?: (n: number, query: Query) => Promise<Query> }) {
  const pages: Page[] = [];
  const watches: Query[] = [];
  let firstPageSeen = false;
  const wrapped: KubeClient = {
    async request<T>(...args: Parameters<KubeClient["request"]>): Promise<T> {
      const res = await client.request<{ metadata?: { resourceVersion?: string; continue?: string }; items?: unknown[] }>(...args);
      const query = args[2]?.query ?? {};
      if (args[0] === "GET" && res?.items) pages.push({ query, resourceVersion: res.metadata?.resourceVersion, continue: res.metadata?.continue, items: res.items.length });
      if (!firstPageSeen && res?.items && hooks.afterFirstPage) {
        firstPageSeen = true;
        await hooks.afterFirstPage();
      }
      return res as T;
    },
    async watch(path, query, onEvent, signal) {
      const sent = hooks.beforeWatch ? await hooks.beforeWatch(watches.length, query ?? {}) : (query ?? {});
      watches.push(sent);
      return client.watch(path, sent, onEvent, signal);
    },
  };
  return { client: wrapped, pages, watches };
}

let namespace = "";
const LABEL = "informer-pages";

beforeAll(async () => {
  namespace = await createRestrictedNamespace("informer-pages");
});

afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, "0")}`);

describe("the informer's paginated list", () => {
  it("caches more objects than one page holds and watches from the list's resource version", async () => {
    const { core, kubeconfigPath } = testCluster();
    const make = (name: string, value = "1") => core.createNamespacedConfigMap({ namespace, body: { metadata: { name, labels: { [LABEL]: "a" } }, data: { v: value } } });
    const listed = names("a", 12);
    for (const name of listed) await make(name);
    const rec = recording(await connectKube(kubeconfigPath), {
      // Between the first page and the rest: one listed object changes, one new is made. Neither may be in the
      // pages (they are of the first page's snapshot); both must arrive through the watch.
      afterFirstPage: async () => {
        const changed = await core.readNamespacedConfigMap({ name: "a-11", namespace });
        await core.replaceNamespacedConfigMap({ name: "a-11", namespace, body: { ...changed, data: { v: "2" } } });
        await make("a-new");
      },
    });
    const events: [InformerEvent, string][] = [];
    const informer = createInformer(rec.client, RESOURCES.configMap, { labelSelector: `${LABEL}=a`, pageSize: 5 });
    informer.on((e, o) => events.push([e, o.metadata.name]));
    await informer.start();
    await waitFor(() => informer.synced, { description: "the first list" });

    expect(rec.pages.map((p) => [p.query["limit"], p.query["continue"] !== undefined, p.items])).toEqual([[5, false, 5], [5, true, 5], [5, true, 2]]);
    // Every page is of one snapshot; the watch resumes from it.
    expect(new Set(rec.pages.map((p) => p.resourceVersion)).size).toBe(1);
    expect(rec.watches[0]?.["resourceVersion"]).toBe(rec.pages[2]!.resourceVersion);
    expect(informer.list(namespace).map((o) => o.metadata.name).sort()).toEqual(expect.arrayContaining(listed));

    await waitFor(() => informer.get(namespace, "a-new") !== undefined && (informer.get(namespace, "a-11") as { data?: { v?: string } })?.data?.v === "2", {
      timeoutMs: 20_000, description: "the changes made between the pages to arrive by the watch",
    });
    expect(events.filter(([, n]) => n === "a-new")).toEqual([["add", "a-new"]]);
    expect(events.filter(([, n]) => n === "a-11").map(([e]) => e)).toEqual(["add", "update"]);
    expect(informer.list(namespace)).toHaveLength(13);
    await informer.stop();
  });

  it("takes a watch event that spans many chunks of the stream whole", async () => {
    const { core, kubeconfigPath } = testCluster();
    const informer = createInformer(await connectKube(kubeconfigPath), RESOURCES.configMap, { labelSelector: `${LABEL}=big` });
    await informer.start();
    await waitFor(() => informer.synced, { description: "the first list" });
    // 300,000 characters (with multi-byte ones, which a chunk boundary may split) are several reads of the socket.
    const value = "é€x".repeat(100_000);
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "big", labels: { [LABEL]: "big" } }, data: { v: value } } });
    await waitFor(() => informer.get(namespace, "big") !== undefined, { timeoutMs: 20_000, description: "the large event" });
    expect((informer.get(namespace, "big") as { data?: { v?: string } }).data?.v).toBe(value);
    await informer.stop();
  });

  describe("over an API server without its watch cache (every read from etcd, whose history the test compacts)", () => {
    let cp: ControlPlane | undefined;
    let core: CoreV1Api;
    const ns = "pages";
    beforeAll(async () => {
      cp = await startControlPlane({ controllerManager: false, apiServerArgs: ["--watch-cache=false"], log: () => undefined });
      core = createTestCluster(cp.kubeconfigPath, cp.binDir).core;
      await core.createNamespace({ body: { metadata: { name: ns } } });
    });
    afterAll(async () => {
      await cp?.stop();
    });
    const make = (name: string, label: string) => core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name, labels: { [LABEL]: label } } } });

    it("lists again from the first page when the next page's version was compacted (410 Expired)", async () => {
      for (const name of names("b", 7)) await make(name, "b");
      const base = await connectKube(cp!.kubeconfigPath);
      const refused: number[] = [];
      const rec = recording({
        request: <T>(...args: Parameters<KubeClient["request"]>) => base.request<T>(...args).catch((err: unknown) => {
          refused.push((err as { code?: number }).code ?? 0);
          throw err;
        }),
        watch: base.watch.bind(base),
      }, {
        // After the first page: one listed object goes away, one is made, and etcd forgets every earlier version,
        // so the second page's token (of the first page's version) is refused.
        afterFirstPage: async () => {
          await core.deleteNamespacedConfigMap({ name: "b-00", namespace: ns });
          await make("b-late", "b");
          await compactEtcd(cp!.etcdClientUrl);
        },
      });
      const events: [InformerEvent, string][] = [];
      const informer = createInformer(rec.client, RESOURCES.configMap, { labelSelector: `${LABEL}=b`, pageSize: 3 });
      informer.on((e, o) => events.push([e, o.metadata.name]));
      await informer.start();
      await waitFor(() => informer.synced, { timeoutMs: 30_000, description: "the list" });

      expect(refused).toEqual([410]);
      // The first page, then the whole new snapshot (b-01..b-06 and b-late) from its first page.
      expect(rec.pages.map((p) => [p.query["continue"] !== undefined, p.items])).toEqual([[false, 3], [false, 3], [true, 3], [true, 1]]);
      expect(rec.watches[0]?.["resourceVersion"]).toBe(rec.pages[3]!.resourceVersion);
      expect(informer.get(ns, "b-00")).toBeUndefined();
      expect(informer.get(ns, "b-late")).toBeDefined();
      expect(events).toContainEqual(["delete", "b-00"]);
      expect(informer.list(ns)).toHaveLength(7);
      await make("b-after", "b");
      await waitFor(() => informer.get(ns, "b-after") !== undefined, { timeoutMs: 20_000, description: "the watch to deliver after the second list" });
      await informer.stop();
    });

    it("lists again in pages when the watch's version was compacted (410 Gone), dropping what went away", async () => {
      for (const name of names("c", 7)) await make(name, "c");
      const rec = recording(await connectKube(cp!.kubeconfigPath), {
        // Before the first watch: one object goes away, one is made, and etcd forgets the list's version.
        beforeWatch: async (n, query) => {
          if (n === 0) {
            await core.deleteNamespacedConfigMap({ name: "c-00", namespace: ns });
            await make("c-late", "c");
            await compactEtcd(cp!.etcdClientUrl);
          }
          return query;
        },
      });
      const events: [InformerEvent, string][] = [];
      const informer = createInformer(rec.client, RESOURCES.configMap, { labelSelector: `${LABEL}=c`, pageSize: 3 });
      informer.on((e, o) => events.push([e, o.metadata.name]));
      await informer.start();
      await waitFor(() => informer.get(ns, "c-late") !== undefined && informer.get(ns, "c-00") === undefined, {
        timeoutMs: 30_000, description: "the list after 410 to bring the cache up to date",
      });
      // Two lists of 7 objects in pages of 3, the second after the refused watch, which resumes from the second.
      expect(rec.pages.map((p) => p.items)).toEqual([3, 3, 1, 3, 3, 1]);
      expect(rec.pages.every((p) => p.query["limit"] === 3)).toBe(true);
      await waitFor(() => rec.watches.length >= 2, { description: "the watch after the second list" });
      expect(rec.watches[0]?.["resourceVersion"]).toBe(rec.pages[2]!.resourceVersion);
      expect(rec.watches[1]?.["resourceVersion"]).toBe(rec.pages[5]!.resourceVersion);
      expect(events).toContainEqual(["delete", "c-00"]);
      expect(events).toContainEqual(["add", "c-late"]);
      expect(informer.list(ns)).toHaveLength(7);
      await make("c-after", "c");
      await waitFor(() => informer.get(ns, "c-after") !== undefined, { timeoutMs: 20_000, description: "the watch to deliver after the relist" });
      await informer.stop();
    });
  });
});
