// The Role that lets a person read a Run's records without reading the namespace's ConfigMaps. A Run's audit
// (`<run>-audit-NNN`), its pinned snapshot (`<run>-policy`) and a large result (`<run>-result`) are ConfigMaps, and
// RBAC grants ConfigMaps of a namespace all or by name: `list` on ConfigMaps would also give an approver the admin's
// `team-notes` and every other team's data. So the controller keeps, in each namespace with Runs, one Role
// (`leviath-run-records`) granting `get` on exactly the names of the records its Runs have, and the admin binds it to
// the people who read them (docs/security.md, "Roles"). The names come from what the controller and the sidecar
// recorded in each Run's status (a pinned snapshot, the sidecar's audit ledger, the result's ConfigMap), each checked
// to be the name the operator gives that record: a status naming any other ConfigMap grants nothing. Pure.
import { FIELD_MANAGER, LABEL } from "../../api/constants.ts";
import { MAX_AUDIT_CHUNKS, type RunStatus } from "../../api/status.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildAuditChunkName, buildChildNames } from "../../sandbox/names.ts";

/** The Role's name, the same in every namespace (what the admin binds). */
export const RECORDS_ROLE = "leviath-run-records";
/** The `leviath.dev/component` label of the Role. */
export const RECORDS_COMPONENT = "run-records";
/**
 * Most names the Role lists (about 40 bytes each, well inside an object's 1 MiB): past it the newest Runs' records are
 * listed, and the oldest Runs' are not readable through the Role (`audit` and `why` say the 403).
 */
export const MAX_RECORD_NAMES = 8192;

/** A Run as the Role is built from: its name, creation time and status. */
export interface RecordsRun {
  readonly metadata: { readonly name: string; readonly creationTimestamp?: string | Date | undefined; readonly deletionTimestamp?: string | Date | undefined };
  readonly status?: RunStatus | undefined;
}

/** The ConfigMaps that hold a Run's records now: its snapshot once pinned, each audit chunk its sidecar recorded, its result's ConfigMap. */
export function listRunRecordNames(run: RecordsRun): string[] {
  const { name } = run.metadata;
  const status = run.status;
  const names = buildChildNames(name);
  const out: string[] = [];
  if (status?.snapshotSha256 !== undefined || status?.agent !== undefined) out.push(names.configMap);
  const chunkNames = new Set(Array.from({ length: MAX_AUDIT_CHUNKS }, (_, i) => buildAuditChunkName(name, i)));
  for (const chunk of status?.audit?.chunks ?? []) if (chunkNames.has(chunk.name) && !out.includes(chunk.name)) out.push(chunk.name);
  if (status?.result?.configMapName === names.result) out.push(names.result);
  return out;
}

const timeOf = (t: string | Date | undefined): string => (t instanceof Date ? t.toISOString() : t ?? "");

/**
 * The Role for a namespace's Runs: `get` on the names of their records, newest Runs first up to
 * {@link MAX_RECORD_NAMES}, sorted. A Role with no name to grant has no rule: a rule with an empty `resourceNames`
 * would grant every ConfigMap of the namespace.
 */
export function buildRecordsRole(namespace: string, runs: readonly RecordsRun[]): KubeObject & { rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames: string[] }[] } {
  const newestFirst = [...runs].filter((r) => r.metadata.deletionTimestamp === undefined)
    .sort((a, b) => timeOf(b.metadata.creationTimestamp).localeCompare(timeOf(a.metadata.creationTimestamp)) || a.metadata.name.localeCompare(b.metadata.name));
  const names: string[] = [];
  for (const run of newestFirst) {
    const own = listRunRecordNames(run);
    if (names.length + own.length > MAX_RECORD_NAMES) break;
    names.push(...own);
  }
  const resourceNames = [...new Set(names)].sort();
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: RECORDS_ROLE, namespace, labels: { [LABEL.component]: RECORDS_COMPONENT, [LABEL.managedBy]: FIELD_MANAGER } },
    rules: resourceNames.length === 0 ? [] : [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames }],
  };
}
