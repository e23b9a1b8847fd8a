// Global setup of the vitest "e2e" project: makes sure the packages, binaries and images exist (each
// script is idempotent and fast when nothing is missing), then starts one control plane and one real node
// for the whole run, its NetworkPolicy enforced by kube-router's firewall, and a real storage provisioner on it as the
// cluster's default StorageClass (local-path-provisioner, WaitForFirstConsumer: any Run's claim binds, as on the
// demo). Tests read them through inject("kubeconfig" | "binDir" | "node").
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { REPO_ROOT, startControlPlane } from "../integration/harness/control-plane.ts";
import { createTestCluster, useTestCluster } from "../integration/harness/test-cluster.ts";
import { installNodeLocalPath } from "./harness/local-path.ts";
import { startNode } from "./harness/node.ts";
import { BUILD_ONLY_IMAGES, ON_DEMAND_IMAGES, readBuiltImages } from "./harness/node-images.ts";
import type {} from "./harness/provided-context.ts";

/** The scripts that prepare a machine for the node, in order; each prints its progress on stderr. */
export const SETUP_SCRIPTS = ["node-packages", "control-plane-bin", "node-bin", "netpol-bin", "build-images"] as const;

/** Prepares the machine, starts the control plane and the node, and returns their teardown. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.KUBECONFIG) {
    process.stderr.write("[e2e] KUBECONFIG is ignored: the e2e suite runs its own control plane and node\n");
  }
  for (const script of SETUP_SCRIPTS) {
    const started = performance.now();
    execFileSync("bash", [join(REPO_ROOT, "scripts", script)], { stdio: ["ignore", "ignore", "inherit"] });
    process.stderr.write(`[e2e] scripts/${script}: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
  const controlPlane = await startControlPlane();
  let node;
  try {
    // The start includes importing every built image but the clients' (their files import them) and the build-only
    // ones: six, about 1.6 GB, which under a machine shared at a load average of 25 took 190 s, past the node's 180 s
    // default.
    const notAtStart: readonly string[] = [...ON_DEMAND_IMAGES, ...BUILD_ONLY_IMAGES];
    const images = Object.keys(readBuiltImages()).filter((name) => !notAtStart.includes(name));
    node = await startNode(controlPlane, { networkPolicy: true, startTimeoutMs: 600_000, images });
  } catch (error) {
    await controlPlane.stop();
    throw error;
  }
  try {
    const started = performance.now();
    useTestCluster(createTestCluster(controlPlane.kubeconfigPath, controlPlane.binDir));
    await installNodeLocalPath(node);
    process.stderr.write(`[e2e] local-path-provisioner, the default StorageClass: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  } catch (error) {
    await node.stop();
    await controlPlane.stop();
    throw error;
  }
  project.provide("kubeconfig", controlPlane.kubeconfigPath);
  project.provide("binDir", controlPlane.binDir);
  project.provide("node", { name: node.name, dataDir: node.dataDir, containerdSocket: node.containerdSocket, cgroupRoot: node.cgroupRoot, images: node.images, network: node.network, networkPolicy: node.networkPolicy, kubeletPort: node.kubeletPort });
  return async () => {
    await node.stop();
    await controlPlane.stop();
  };
}
