// The informer survives its API server going away: a TCP proxy between it and the real API server is cut (every
// connection reset, new ones refused) and brought back; changes made meanwhile reach the cache.
import { createServer, connect, type Server, type Socket } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKubeClient, type KubeClient } from "../../../src/kube/client.ts";
import { connectKube } from "../../../src/kube/connect.ts";
import { createInformer } from "../../../src/kube/informer.ts";
import { RESOURCES } from "../../../src/kube/resources.ts";
import { createRestrictedNamespace, deleteNamespace, testCluster, waitFor } from "../harness/index.ts";

/** A cuttable TCP forwarder in front of the API server. */
function startProxy(target: URL, port = 0): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let server: Server;
  let bound = port;
  const listen = () => new Promise<void>((resolve) => {
    server = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("close", () => sockets.delete(s));
        s.on("error", () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    server.listen(bound, "127.0.0.1", () => {
      bound = (server.address() as { port: number }).port;
      resolve();
    });
  });
  return listen().then(() => ({
    port: bound,
    cut: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    }),
    restore: listen,
  }));
}

let namespace = "";

beforeAll(async () => {
  namespace = await createRestrictedNamespace("informer");
});

afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});

/** The same informer over either client: the library's (any kubeconfig) and the plain one on node:https. */
const CLIENTS: [string, (kc: KubeConfig) => Promise<KubeClient>][] = [
  ["client-node's KubeConfig", (kc) => Promise.resolve(createKubeClient(kc))],
  ["node:https (connectKube)", async (kc) => {
    const dir = await mkdtemp(join(tmpdir(), "informer-kubeconfig-"));
    const file = join(dir, "kubeconfig");
    await writeFile(file, kc.exportConfig(), { mode: 0o600 });
    return connectKube(file);
  }],
];

describe.each(CLIENTS)("the informer over %s", (_name, connect) => {
  it("restarts after its API server vanished and catches up on what changed meanwhile", async () => {
    const { kc, core } = testCluster();
    const target = new URL(kc.getCurrentCluster()!.server);
    const proxy = await startProxy(target);
    const proxied = new KubeConfig();
    proxied.loadFromString(kc.exportConfig());
    const cluster = proxied.getCurrentCluster()!;
    proxied.clusters = proxied.clusters.map((c) => (c.name === cluster.name ? { ...c, server: `https://127.0.0.1:${proxy.port}` } : c));

    const errors: unknown[] = [];
    const informer = createInformer(await connect(proxied), RESOURCES.configMap, { labelSelector: "informer-test=yes", onError: (_r, err) => errors.push(err) });
    const make = (name: string) => core.createNamespacedConfigMap({ namespace, body: { metadata: { name, labels: { "informer-test": "yes" } } } });
    await Promise.all(["before", "during", "after"].map((name) => core.deleteNamespacedConfigMap({ name, namespace }).catch(() => undefined)));
    await make("before");
    await informer.start();
    await waitFor(() => informer.synced, { description: "the first list" });
    expect(informer.get(namespace, "before")?.metadata.name).toBe("before");

    await proxy.cut();
    await waitFor(() => errors.length > 0, { timeoutMs: 20_000, description: "the watch to fail" });
    await make("during");
    await core.deleteNamespacedConfigMap({ name: "before", namespace });
    await new Promise((r) => setTimeout(r, 1500));
    expect(informer.get(namespace, "during")).toBeUndefined();

    await proxy.restore();
    await waitFor(() => informer.get(namespace, "during") !== undefined && informer.get(namespace, "before") === undefined, {
      timeoutMs: 40_000, description: "the cache to catch up after the restart",
    });
    await make("after");
    await waitFor(() => informer.get(namespace, "after") !== undefined, { timeoutMs: 20_000, description: "the watch to deliver again" });
    await informer.stop();
    await proxy.cut();
  });
});
