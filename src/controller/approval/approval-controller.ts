import { KIND, LABEL } from "../../api/constants.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { COMPONENT } from "../../sandbox/names.ts";
import type { ClusterCache } from "../cluster-port.ts";
import type { ControllerDeclaration, KeyMap } from "../controller-declaration.ts";
import { buildObjectKeyOf } from "../object-key.ts";
import { approvalRunName, createApprovalReconciler } from "./approval-reconciler.ts";

/** The keys of the Approvals that name the Run `run` in `namespace`. */
function approvalsOf(cache: ClusterCache, namespace: string | undefined, run: string): string[] {
  return cache.list("approval", namespace).filter((a) => approvalRunName(a) === run).map(buildObjectKeyOf);
}

/** A relay (or its reader Role) someone else edited or deleted is written again by its Approvals' pass. */
const relayApprovals: KeyMap = (child: KubeObject, cache) => {
  const relayOf = child.metadata.labels?.[LABEL.component] === COMPONENT.approvals ? child.metadata.ownerReferences?.find((r) => r.kind === KIND.run) : undefined;
  return relayOf && child.metadata.namespace ? approvalsOf(cache, child.metadata.namespace, relayOf.name) : [];
};

/** The Approval controller: binds Approvals to their Run and relays the answers to its sidecar. */
export const approvalController: ControllerDeclaration = {
  name: "approval",
  purpose: "binds each Approval to the Run it names, relays the answers to that Run's sidecar and deletes Approvals after their TTL",
  for: { kind: "approval", keys: (approval) => [buildObjectKeyOf(approval)] },
  watches: [
    // An Approval's binding and match follow its Run (created, re-created, a prompt raised or answered).
    { kind: "run", keys: (run, cache) => approvalsOf(cache, run.metadata.namespace, run.metadata.name) },
    // The relay ConfigMap and the reader Role and RoleBinding: owned by the Run, not as its controller.
    { kind: "configMap", keys: relayApprovals },
    { kind: "role", keys: relayApprovals },
    { kind: "roleBinding", keys: relayApprovals },
  ],
  reconciler: (ctx) => createApprovalReconciler({ ...ctx, ttlMs: ctx.approvalTtlMs }),
};
