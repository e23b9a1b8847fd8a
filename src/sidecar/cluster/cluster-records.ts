// What the sidecar keeps in the cluster beyond its periodic part of the Run's status: its result (the reference in
// `status.result` under its own field manager, a larger output in the result ConfigMap) and its audit ConfigMaps,
// owned by the Run (garbage-collected with it) and labelled `managed-by: leviath-sidecar`, so the controller,
// which prunes the children it manages, never takes them for its own. Written by server-side apply (create or
// replace in one request); the per-Run Role lets the sidecar read or change these names only. A restarted
// sidecar reads them first (`readStored`) and carries on from them.
import { API_VERSION, KIND, LABEL, SIDECAR_FIELD_MANAGER, SIDECAR_RESULT_FIELD_MANAGER } from "../../api/constants.ts";
import { RunResultSchema, type RunResult } from "../../api/status.ts";
import type { KubeClient } from "../../kube/client.ts";
import { isApiStatus } from "../../kube/errors.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { buildAuditChunkName, buildChildNames, buildLabelValue, COMPONENT, MAX_AUDIT_CHUNKS } from "../../sandbox/names.ts";
import { AUDIT_CHUNK_KEY } from "../storage/audit-chunks.ts";
import { RESULT_KEY } from "../core/run-result.ts";

/** Where the sidecar's records go: its Run. */
export interface RunLocation {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
}

/** What earlier starts of this Run's sidecar stored: the last audit chunk (index and text), the result and the runtime's warnings. */
export interface StoredRecords {
  readonly lastChunk?: { readonly index: number; readonly text: string };
  readonly result?: RunResult;
  readonly runtimeWarnings?: readonly string[];
}

/** The sidecar's records of one Run in the cluster. */
export interface ClusterRecords {
  readStored(): Promise<StoredRecords>;
  writeAuditChunk(index: number, text: string): Promise<void>;
  writeResult(text: string): Promise<void>;
  /** Applies `status.result` alone, under {@link SIDECAR_RESULT_FIELD_MANAGER}. */
  writeResultReference(result: RunResult): Promise<void>;
}

type ConfigMap = { metadata?: { ownerReferences?: { uid?: string }[] }; data?: Record<string, string> };
type RunObject = { metadata?: { uid?: string }; status?: { result?: unknown; runtimeWarnings?: unknown } };

/** Writes and reads back the sidecar's records of one Run; the Run's uid (for the owner reference) is read once. */
export function createClusterRecords(at: RunLocation): ClusterRecords {
  let uid: Promise<string> | undefined;
  const runUid = (): Promise<string> => {
    uid ??= readRun(at).then((r) => r.uid);
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
    async readStored() {
      // The Run and the audit ConfigMaps are read at once; a chunk counts once the Run's uid says it is its.
      const reading = readRun(at);
      const chunk = readLastChunk(at, reading.then((r) => r.uid));
      // Its failure is the one thrown below, after the Run's own.
      chunk.catch(() => undefined);
      const run = await reading;
      uid ??= Promise.resolve(run.uid);
      const lastChunk = await chunk;
      const warnings = run.runtimeWarnings.length > 0 ? { runtimeWarnings: run.runtimeWarnings } : {};
      return { ...(lastChunk === undefined ? {} : { lastChunk }), ...(run.result === undefined ? {} : { result: run.result }), ...warnings };
    },
    writeAuditChunk: (index, text) => apply(buildAuditChunkName(at.run, index), COMPONENT.audit, { [AUDIT_CHUNK_KEY]: text }),
    writeResult: (text) => apply(buildChildNames(at.run).result, COMPONENT.result, { [RESULT_KEY]: text }),
    async writeResultReference(result) {
      const body = { apiVersion: API_VERSION, kind: KIND.run, metadata: { name: at.run, namespace: at.namespace }, status: { result } };
      await at.client.request("PATCH", buildPath(RESOURCES.run, at.namespace, at.run, "status"), {
        query: { fieldManager: SIDECAR_RESULT_FIELD_MANAGER, force: true, fieldValidation: "Strict" },
        body,
        contentType: "application/apply-patch+yaml",
      });
    },
  };
}

/**
 * The Run's uid, its stored result (checked against the schema: a result that does not parse fails the start) and
 * the runtime's warnings an earlier start reported (strings only: they are shown, never acted on).
 */
async function readRun(at: RunLocation): Promise<{ uid: string; result: RunResult | undefined; runtimeWarnings: string[] }> {
  const r = await at.client.request<RunObject>("GET", buildPath(RESOURCES.run, at.namespace, at.run));
  if (!r.metadata?.uid) throw new Error(`Run '${at.run}' has no uid`);
  const stored = r.status?.runtimeWarnings;
  const runtimeWarnings = Array.isArray(stored) ? stored.filter((w): w is string => typeof w === "string") : [];
  if (r.status?.result === undefined) return { uid: r.metadata.uid, result: undefined, runtimeWarnings };
  const parsed = RunResultSchema.safeParse(r.status.result);
  if (!parsed.success) throw new Error(`Run '${at.run}': status.result is not a result: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return { uid: r.metadata.uid, result: parsed.data, runtimeWarnings };
}

/** How many audit ConfigMaps a start reads at once while it looks for the last one. */
const CHUNK_READS_AT_ONCE = 8;

/**
 * The highest-numbered audit ConfigMap this Run owns (by uid: one planted under the name before the Run existed
 * is not its audit and is written over), read from the top so a chunk missing in the middle never lets the
 * sequence write over a later one. Any error but 404 fails the start: the sidecar never writes over what it could
 * not read.
 */
async function readLastChunk(at: RunLocation, runUid: Promise<string>): Promise<StoredRecords["lastChunk"]> {
  const read = async (index: number) => {
    const name = buildAuditChunkName(at.run, index);
    const cm = await at.client.request<ConfigMap>("GET", buildPath(RESOURCES.configMap, at.namespace, name)).catch((err: unknown) => {
      if (isApiStatus(err, 404)) return undefined;
      throw new Error(`reading the audit ConfigMap '${name}' failed: ${(err as Error).message}`);
    });
    const uid = await runUid;
    return cm?.metadata?.ownerReferences?.some((o) => o.uid === uid) ? { index, text: cm.data?.[AUDIT_CHUNK_KEY] ?? "" } : undefined;
  };
  // A few names at once, from the top: the start waits for a few round trips, not one per possible chunk.
  for (let top = MAX_AUDIT_CHUNKS - 1; top >= 0; top -= CHUNK_READS_AT_ONCE) {
    const indexes = Array.from({ length: Math.min(CHUNK_READS_AT_ONCE, top + 1) }, (_, i) => top - i);
    const found = (await Promise.all(indexes.map(read))).find((c) => c !== undefined);
    if (found !== undefined) return found;
  }
  return undefined;
}
