import { randomBytes } from "node:crypto";
import { apiError } from "./api-error.ts";
import { testCluster } from "./test-cluster.ts";
import type { TestCluster } from "./test-cluster.ts";
import { waitFor } from "./wait-for.ts";

/** The Pod Security Admission label that makes a namespace reject every pod the restricted profile forbids. */
export const POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";

/** A unique DNS-1123 namespace name starting with `prefix`. */
export function uniqueName(prefix: string): string {
  const base = prefix.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 50) || "test";
  return `${base}-${randomBytes(4).toString("hex")}`;
}

/**
 * Creates a namespace named `<prefix>-<random>` that enforces (and warns and audits) the `restricted`
 * Pod Security profile, waits for its `default` service account (pods are refused until the controller
 * manager made it) and returns the name.
 */
export async function createRestrictedNamespace(prefix: string, cluster: TestCluster = testCluster()): Promise<string> {
  const name = uniqueName(prefix);
  const labels: Record<string, string> = {};
  for (const mode of ["enforce", "warn", "audit"]) {
    labels[`pod-security.kubernetes.io/${mode}`] = "restricted";
    labels[`pod-security.kubernetes.io/${mode}-version`] = "latest";
  }
  await cluster.core.createNamespace({ body: { metadata: { name, labels } } });
  await waitFor(
    () => cluster.core.readNamespacedServiceAccount({ name: "default", namespace: name }),
    { timeoutMs: 60_000, description: `the default service account in namespace ${name}` },
  );
  return name;
}

/** Deletes a namespace (the namespace controller removes its contents); a missing one is fine. */
export async function deleteNamespace(name: string, cluster: TestCluster = testCluster()): Promise<void> {
  try {
    await cluster.core.deleteNamespace({ name });
  } catch (error) {
    if (apiError(error)?.code !== 404) throw error;
  }
}
