// What the suites that answer a cluster sidecar's prompts with Approvals share: the CRDs, a restricted namespace,
// the chart's approval admission policies and the controller (which binds each Approval to its Run's uid and
// relays it); Runs whose Agent is missing (so the controller makes no children) with their sidecar's identity built
// exactly as the controller builds it; and Approvals as the chart's mutating policy would leave them.
import { expect } from "vitest";
import { buildRole, buildRoleBinding, buildServiceAccount } from "../../src/sandbox/run-objects.ts";
import type { SidecarProcess } from "../cli/sidecar-harness.ts";
import { installApprovalPolicies } from "./admission/admission-harness.ts";
import { startTestOperator } from "./controller/operator-harness.ts";
import { ADMIN_USER } from "./harness/generate-certificates.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, testCluster } from "./harness/index.ts";

/** Our API group and version, for the custom-objects client. */
export const GROUP = { group: "leviath.dev", version: "v1alpha1" };

/** A running approval cluster: its namespace, and how to take it down (the sidecar first, if one was started). */
export interface ApprovalCluster {
  readonly namespace: string;
  /** Stops the controller alone (idempotent): what a test that sets a Run's phase by hand needs. */
  stopController(): Promise<void>;
  stop(sidecar?: SidecarProcess): Promise<void>;
}

/** Installs the CRDs and approval policies, creates a restricted namespace named after `prefix`, starts the controller. */
export async function startApprovalCluster(prefix: string): Promise<ApprovalCluster> {
  await installCrds("crds/");
  const namespace = await createRestrictedNamespace(prefix);
  const policies = await installApprovalPolicies();
  const op = await startTestOperator();
  let stopped: Promise<void> | undefined;
  const stopController = () => (stopped ??= op.stop());
  return {
    namespace,
    stopController,
    async stop(sidecar) {
      if (sidecar) expect(await sidecar.stop()).toBe(0);
      await stopController();
      await policies.remove();
      await deleteNamespace(namespace);
    },
  };
}

/** Creates Run `name` (no Agent: the controller makes no children) and returns its uid. */
export async function createTestRun(namespace: string, name: string): Promise<string> {
  const body = { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name }, spec: { agentRef: { name: "agent" } } };
  const run = await testCluster().custom.createNamespacedCustomObject({ ...GROUP, namespace, plural: "runs", body }) as { metadata: { uid: string } };
  return run.metadata.uid;
}

/** Applies the sidecar identity the controller builds for Run `name` (ServiceAccount, Role, RoleBinding), execing into `pods`. */
export async function applySidecarIdentity(namespace: string, name: string, uid: string, pods: readonly string[]): Promise<void> {
  const ref = { name, namespace, uid };
  const identity = [buildServiceAccount(ref, "agent"), buildRole(ref, "agent", pods), buildRoleBinding(ref, "agent")];
  await kubectl(["apply", "-n", namespace, "-f", "-"], { input: identity.map((o) => JSON.stringify(o)).join("\n---\n") });
}

/**
 * An allow-once Approval of `approvalId` for `run`. approvedBy is the creating user, as the chart's mutating policy
 * would set it: other suites install and remove the same cluster-wide approval policies, and a validating one may
 * be in force before the mutating one takes effect.
 */
export function buildTestApproval(name: string, run: string, approvalId: string, reason: string) {
  return { apiVersion: "leviath.dev/v1alpha1", kind: "Approval", metadata: { name }, spec: { runRef: { name: run }, approvalId, decision: "allowOnce", reason, approvedBy: ADMIN_USER } };
}
