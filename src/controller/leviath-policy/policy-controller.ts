import { CLUSTER_POLICY_NAME, LABEL } from "../../api/constants.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ControllerDeclaration } from "../controller-declaration.ts";
import { createPolicyReconciler } from "./policy-reconciler.ts";

const CLUSTER_POLICY_KEY = [CLUSTER_POLICY_NAME];

/** A Run started cold and not running yet: where a pool's miss shows. */
const isPendingCold = (run: KubeObject) => {
  const status = (run as { status?: { startedFrom?: string; phase?: string } }).status;
  return status?.startedFrom === "cold" && status.phase === "Pending";
};

/** The policy controller: the singleton LeviathPolicy's validity and the probe's finding on its status. */
export const policyController: ControllerDeclaration = {
  name: "policy",
  purpose: "reports whether the LeviathPolicy `cluster` is valid, which generation is in force, and the NetworkPolicy probe's finding",
  // Only `cluster` is read; an event of any policy looks at it again.
  for: { kind: "policy", keys: () => CLUSTER_POLICY_KEY },
  signals: { networkEnforcement: () => CLUSTER_POLICY_KEY },
  startKeys: () => CLUSTER_POLICY_KEY,
  // A warm pool's pod changing changes the pools' counts on the status (an adoption changes its pod); so does a Run
  // just started cold, which may be a miss (`startedFrom` is written only with warm pools on).
  watches: [
    { kind: "pod", keys: (pod) => (pod.metadata.labels?.[LABEL.pool] !== undefined ? CLUSTER_POLICY_KEY : []) },
    { kind: "run", keys: (run) => (isPendingCold(run) ? CLUSTER_POLICY_KEY : []) },
  ],
  // One policy: more workers would only wait on each other.
  workers: 1,
  reconciler: (ctx) => createPolicyReconciler(ctx),
};
