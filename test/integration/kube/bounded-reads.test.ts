// The kube client reads API responses with a cap: a body past it is refused (and its stream cancelled), never read
// whole into memory or parsed truncated. Against the real API server, with a ConfigMap larger than the cap.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RESPONSE_TOO_LARGE } from "../../../src/kube/bounded-body.ts";
import { createKubeClient } from "../../../src/kube/client.ts";
import { KubeApiError } from "../../../src/kube/errors.ts";
import { createRestrictedNamespace, deleteNamespace, testCluster } from "../harness/index.ts";

let namespace = "";
const SIZE = 512 * 1024;

beforeAll(async () => {
  namespace = await createRestrictedNamespace("bounded");
  await testCluster().core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "big" }, data: { blob: "x".repeat(SIZE) } } });
});

afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});

describe("the kube client", () => {
  const path = () => `/api/v1/namespaces/${namespace}/configmaps/big`;

  it("refuses a response body larger than its cap, naming the request and the cap", async () => {
    const client = createKubeClient(testCluster().kc);
    const err = await client.request("GET", path(), { maxResponseBytes: 64 * 1024 }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).reason).toBe(RESPONSE_TOO_LARGE);
    expect((err as KubeApiError).message).toBe(`GET ${path()}: response body exceeds 65536 bytes; refused`);
  });

  it("reads a body within the cap whole", async () => {
    const client = createKubeClient(testCluster().kc);
    const cm = await client.request<{ data: { blob: string } }>("GET", path(), { maxResponseBytes: SIZE * 2 });
    expect(cm.data.blob.length).toBe(SIZE);
    const byDefault = await client.request<{ data: { blob: string } }>("GET", path());
    expect(byDefault.data.blob.length).toBe(SIZE);
  });
});
