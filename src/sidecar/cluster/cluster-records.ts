// What the sidecar keeps in the cluster beyond the Run's status: its result ConfigMap and its audit ConfigMaps,
// owned by the Run (garbage-collected with it) and labelled `managed-by: leviath-sidecar`, so the controller,
// which prunes the children it manages, never takes them for its own. Written by server-side apply (create or
// replace in one request); the per-Run Role lets the sidecar read or change these names only.
import { API_VERSION, KIND, LABEL, SIDECAR_FIELD_MANAGER } from "../../api/constants.ts";
import type { KubeClient } from "../../kube/client.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { buildAuditChunkName, buildChildNames, buildLabelValue, COMPONENT } from "../../sandbox/names.ts";
import { AUDIT_CHUNK_KEY } from "../storage/audit-chunks.ts";
import { RESULT_KEY } from "../core/run-result.ts";

/** Where the sidecar's records go: its Run. */
export interface RunLocation {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
}

/** Writes the sidecar's ConfigMaps of one Run; the Run's uid (for the owner reference) is read once. */
export function createClusterRecords(at: RunLocation): { writeAuditChunk(index: number, text: string): Promise<void>; writeResult(text: string): Promise<void> } {
  let uid: Promise<string> | undefined;
  const runUid = (): Promise<string> => {
    uid ??= at.client.request<{ metadata?: { uid?: string } }>("GET", buildPath(RESOURCES.run, at.namespace, at.run)).then((r) => {
      if (!r.metadata?.uid) throw new Error(`Run '${at.run}' has no uid`);
      return r.metadata.uid;
    });
    // A failed read is tried again next time.
    uid.catch(() => {
      uid = undefined;
    });
    return uid;
  };
  const apply = async (name: string, component: string, data: Record<string, string>): Promise<void> => {
    const body = {
      apiVersion: "v1", kind: "ConfigMap",
      metadata: {
        name, namespace: at.namespace,
        labels: { [LABEL.run]: buildLabelValue(at.run), [LABEL.component]: component, [LABEL.managedBy]: SIDECAR_FIELD_MANAGER },
        // Not the controller: the Run's children the controller manages are pruned, these must stay.
        ownerReferences: [{ apiVersion: API_VERSION, kind: KIND.run, name: at.run, uid: await runUid(), controller: false, blockOwnerDeletion: false }],
      },
      data,
    };
    await at.client.request("PATCH", buildPath(RESOURCES.configMap, at.namespace, name), {
      query: { fieldManager: SIDECAR_FIELD_MANAGER, force: true, fieldValidation: "Strict" },
      body,
      contentType: "application/apply-patch+yaml",
    });
  };
  return {
    writeAuditChunk: (index, text) => apply(buildAuditChunkName(at.run, index), COMPONENT.audit, { [AUDIT_CHUNK_KEY]: text }),
    writeResult: (text) => apply(buildChildNames(at.run).result, COMPONENT.result, { [RESULT_KEY]: text }),
  };
}
