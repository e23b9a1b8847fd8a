// The records controller: keeps each namespace's `leviath-run-records` Role (records-role.ts) granting `get` on
// exactly the ConfigMaps that hold its Runs' records, so a person bound to it reads a Run's audit, snapshot and
// result (`kubectl leviath audit`, `why`, `result`) without `list` on the namespace's ConfigMaps.
import { isApplied } from "../applied.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "../cluster-port.ts";
import { isSameStatus } from "../conditions.ts";
import type { ControllerDeclaration } from "../controller-declaration.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildRecordsRole, RECORDS_ROLE, type RecordsRun } from "./records-role.ts";

/** The namespace of a Run (or of the Role), the key this controller reconciles. */
const namespaceOf = (obj: KubeObject): string[] => (obj.metadata.namespace ? [obj.metadata.namespace] : []);

/** Reconcile one namespace's Role: written when the cache does not hold it as built; never made where no Run has a record. */
export function createRecordsReconciler(deps: { cache: ClusterCache; writer: ClusterWriter }): (namespace: string) => Promise<ReconcileResult> {
  return async (namespace) => {
    const role = buildRecordsRole(namespace, deps.cache.list("run", namespace) as unknown as RecordsRun[]);
    const live = deps.cache.get("role", namespace, RECORDS_ROLE) as (KubeObject & { rules?: unknown[] | null }) | undefined;
    if (live === undefined && role.rules.length === 0) return {};
    // The server keeps a Role without rules as `rules: null`: rules are compared as lists.
    if (live !== undefined && isApplied(role.metadata, live.metadata) && isSameStatus(role.rules, live.rules ?? [])) return {};
    await deps.writer.apply(role);
    return {};
  };
}

/** The records controller: one key per namespace with Runs. */
export const recordsController: ControllerDeclaration = {
  name: "records",
  purpose: "keeps each namespace's leviath-run-records Role granting get on exactly its Runs' audit, snapshot and result ConfigMaps",
  for: { kind: "run", keys: namespaceOf },
  watches: [
    // The Role edited or deleted by someone else is written again.
    { kind: "role", keys: (role) => (role.metadata.name === RECORDS_ROLE ? namespaceOf(role) : []) },
  ],
  reconciler: (ctx) => createRecordsReconciler(ctx),
};
