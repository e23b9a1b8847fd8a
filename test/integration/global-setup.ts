// Global setup of the vitest "integration" project: one real control plane for the whole run, or the
// cluster KUBECONFIG names. Tests read both through inject() (see harness/test-cluster.ts).
import type { TestProject } from "vitest/node";
import { resolveBinDir, startControlPlane } from "./harness/control-plane.ts";
import type {} from "./harness/provided-context.ts";

/** Starts the control plane (unless KUBECONFIG is set) and returns its teardown. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const existing = process.env.KUBECONFIG;
  if (existing) {
    process.stderr.write(`[control-plane] using the cluster of KUBECONFIG=${existing}; starting nothing\n`);
    project.provide("kubeconfig", existing);
    project.provide("binDir", resolveBinDir());
    return async () => {};
  }
  const controlPlane = await startControlPlane();
  project.provide("kubeconfig", controlPlane.kubeconfigPath);
  project.provide("binDir", controlPlane.binDir);
  return controlPlane.stop;
}
