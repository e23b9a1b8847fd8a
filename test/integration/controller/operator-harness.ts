// Helpers of the controller's integration tests: an in-process operator against the test cluster, with its
// log lines kept for assertions, and small readers for our objects.
import { Writable } from "node:stream";
import type { KubernetesObject } from "@kubernetes/client-node";
import { startOperator, type Operator, type OperatorOptions } from "../../../src/controller/operator.ts";
import { createKubeClient } from "../../../src/kube/client.ts";
import { createLogger } from "../../../src/log/logger.ts";
import { DEFAULT_POD_SETTINGS, type PodSettings } from "../../../src/sandbox/pod-settings.ts";
import { afterAll, beforeAll } from "vitest";
import { apiError, createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "../harness/index.ts";

/** An operator running in this process, and every JSON line it logged. */
export interface TestOperator {
  operator: Operator;
  logs: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** The runtime image the test operator runs Agents with by default; the policy's image ceiling always allows it. */
export const TEST_RUNTIME_IMAGE = "r:1";

/** Start the operator in-process against the test cluster (no leader election, no listeners). */
export async function startTestOperator(settings: Partial<PodSettings> = {}, options: Pick<OperatorOptions, "approvalTtlMs" | "webhook" | "warmPools" | "poolLeftoverGraceMs" | "approvalNotifier"> = {}): Promise<TestOperator> {
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const operator = await startOperator({
    client: createKubeClient(testCluster().kc),
    settings: { ...DEFAULT_POD_SETTINGS, sidecarImage: "registry.example/leviath:test", defaultRuntimeImage: TEST_RUNTIME_IMAGE, ...settings },
    workers: 4,
    log: createLogger("debug", sink),
    ...options,
  });
  return { operator, logs, stop: () => operator.stop() };
}

/**
 * For a test file: the CRDs installed, a fresh restricted namespace (`<prefix>-...`), no LeviathPolicy `cluster`, and
 * the operator running, each undone after the file (the hooks are registered here). `namespace` is set once the
 * file's tests run.
 */
export function useOperatorWithoutPolicy(prefix: string, options: Pick<OperatorOptions, "warmPools" | "poolLeftoverGraceMs"> = {}): { readonly namespace: string; metrics(): Promise<string> } {
  const state: { namespace: string; op?: TestOperator } = { namespace: "" };
  const deletePolicy = () => testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  beforeAll(async () => {
    await installCrds("crds/");
    state.namespace = await createRestrictedNamespace(prefix);
    await deletePolicy();
    state.op = await startTestOperator({}, options);
  });
  afterAll(async () => {
    await state.op?.stop();
    await deletePolicy();
    if (state.namespace) await deleteNamespace(state.namespace);
  });
  return { get namespace() { return state.namespace; }, metrics: async () => (await state.op?.operator.metrics.registry.metrics()) ?? "" };
}

/** Our resources' REST coordinates, for the custom-objects client. */
export const OURS = {
  agents: { group: "leviath.dev", version: "v1alpha1", plural: "agents" },
  runs: { group: "leviath.dev", version: "v1alpha1", plural: "runs" },
  policies: { group: "leviath.dev", version: "v1alpha1", plural: "leviathpolicies" },
} as const;

/** A custom object as read back. */
export type Custom = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> & { conditions?: { type: string; status: string; reason: string; message: string }[] } };

/** Create an Agent. */
export async function createAgent(namespace: string, name: string, spec: Record<string, unknown>): Promise<Custom> {
  return (await testCluster().custom.createNamespacedCustomObject({ ...OURS.agents, namespace, body: { apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name }, spec } })) as Custom;
}

/** Create a Run. */
export async function createRun(namespace: string, name: string, spec: Record<string, unknown>): Promise<Custom> {
  return (await testCluster().custom.createNamespacedCustomObject({ ...OURS.runs, namespace, body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name }, spec } })) as Custom;
}

/** Apply the cluster LeviathPolicy (server-side, as the admin would). */
export async function applyPolicy(spec: Record<string, unknown>): Promise<void> {
  const { objects } = testCluster();
  await objects.patch({ apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec }, undefined, undefined, "leviath-test", true, "application/apply-patch+yaml");
}

/** Read one of our namespaced objects. */
export async function readCustom(kind: "agents" | "runs", namespace: string, name: string): Promise<Custom> {
  return (await testCluster().custom.getNamespacedCustomObject({ ...OURS[kind], namespace, name })) as Custom;
}

/** One of our objects once `check` holds for it (within 30 s). */
export function waitForCustom(kind: "agents" | "runs", namespace: string, name: string, check: (obj: Custom) => boolean, description: string): Promise<Custom> {
  return waitFor(async () => {
    const obj = await readCustom(kind, namespace, name);
    return check(obj) ? obj : undefined;
  }, { timeoutMs: 30_000, description });
}

/** A merge patch of one of our objects (spec or metadata). */
export async function patchCustom(kind: "agents" | "runs", namespace: string, name: string, patch: Record<string, unknown>): Promise<Custom> {
  const { objects } = testCluster();
  const apiVersion = "leviath.dev/v1alpha1";
  const { metadata, ...rest } = patch as { metadata?: Record<string, unknown> };
  const body = { apiVersion, kind: kind === "agents" ? "Agent" : "Run", metadata: { ...metadata, name, namespace }, ...rest };
  return (await objects.patch(body, undefined, undefined, "leviath-test", undefined, "application/merge-patch+json")) as Custom;
}

/** The condition of `type` on an object's status. */
export function conditionOf(obj: Custom, type: string) {
  return obj.status?.conditions?.find((c) => c.type === type);
}

/** Every child of a Run that carries our run label, as `Kind/name`, sorted. */
export async function childrenOf(namespace: string, run: string): Promise<{ ref: string; obj: KubernetesObject }[]> {
  const { objects } = testCluster();
  const selector = `leviath.dev/run=${run}`;
  const kinds: [string, string][] = [
    ["v1", "Pod"], ["v1", "ConfigMap"], ["v1", "ServiceAccount"], ["v1", "PersistentVolumeClaim"],
    ["rbac.authorization.k8s.io/v1", "Role"], ["rbac.authorization.k8s.io/v1", "RoleBinding"], ["networking.k8s.io/v1", "NetworkPolicy"],
  ];
  const out: { ref: string; obj: KubernetesObject }[] = [];
  for (const [apiVersion, kind] of kinds) {
    const list = await objects.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, selector);
    for (const obj of list.items) if (!obj.metadata?.deletionTimestamp) out.push({ ref: `${kind}/${obj.metadata?.name}`, obj });
  }
  return out.sort((a, b) => (a.ref < b.ref ? -1 : 1));
}

/** Whether reading throws 404. */
export async function isGone(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (error) {
    if (apiError(error)?.code === 404) return true;
    throw error;
  }
}
