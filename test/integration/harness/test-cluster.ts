import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObjectApi } from "@kubernetes/client-node";
import { inject } from "vitest";
import type {} from "./provided-context.ts";

/** Typed clients for one cluster, plus where its kubeconfig and tools are. */
export type TestCluster = {
  kubeconfigPath: string;
  binDir: string;
  kc: KubeConfig;
  core: CoreV1Api;
  apiext: ApiextensionsV1Api;
  custom: CustomObjectsApi;
  /** Generic, discovery-based access to any kind (server-side apply, reads of custom resources). */
  objects: KubernetesObjectApi;
};

/** Builds the clients for the cluster of `kubeconfigPath` (its current context). */
export function createTestCluster(kubeconfigPath: string, binDir: string): TestCluster {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return {
    kubeconfigPath,
    binDir,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apiext: kc.makeApiClient(ApiextensionsV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    objects: KubernetesObjectApi.makeApiClient(kc),
  };
}

let current: TestCluster | undefined;

/** The cluster the integration project's global setup started (or KUBECONFIG named); one per test file. */
export function testCluster(): TestCluster {
  current ??= createTestCluster(inject("kubeconfig"), inject("binDir"));
  return current;
}

/**
 * Points this test file's helpers (kubectl, helm, the fixtures) at another cluster: an e2e file that starts a
 * control plane and a node of its own (a node without a NetworkPolicy data plane, beside the suite's).
 */
export function useTestCluster(cluster: TestCluster): void {
  current = cluster;
}
