// What the sidecar keeps in the cluster beyond its periodic part of the Run's status: its result (the reference in
// `status.result` under its own field manager, a larger output in the result ConfigMap) and its audit ConfigMaps,
// owned by the Run (garbage-collected with it) and labelled `managed-by: leviath-sidecar`, so the controller,
// which prunes the children it manages, never takes them for its own. The per-Run Role lets the sidecar read,
// change or delete these names only, but anyone who may create ConfigMaps (another Run's sidecar) can take a name
// first, owner reference and all: so the sidecar creates each object itself (deleting one it did not make), and
// records what it wrote in each audit ConfigMap (name, size, SHA-256) in the Run's `status.audit`, which only it
// and the controller may write. A restarted sidecar (`readStored`) continues only after what that ledger vouches
// for; `kubectl leviath audit` shows only that.
import { API_VERSION, KIND, LABEL, SIDECAR_AUDIT_FIELD_MANAGER, SIDECAR_FIELD_MANAGER, SIDECAR_RESULT_FIELD_MANAGER } from "../../api/constants.ts";
import { RunAuditStatusSchema, RunResultSchema, type AuditChunkDigest, type RunResult } from "../../api/status.ts";
import type { KubeClient } from "../../kube/client.ts";
import { isApiStatus } from "../../kube/errors.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { buildAuditChunkName, buildChildNames, buildLabelValue, COMPONENT, MAX_AUDIT_CHUNKS } from "../../sandbox/names.ts";
import { AUDIT_CHUNK_KEY } from "../storage/audit-chunks.ts";
import { computeChunkDigest, recordChunkDigest, verifyChunk } from "../storage/audit-digests.ts";
import { RESULT_KEY } from "../core/run-result.ts";

/** Where the sidecar's records go: its Run. */
export interface RunLocation {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
  /** The Run as read a moment ago (a bound pool pod's binding check): `readStored` takes it instead of a GET. */
  readonly read?: unknown;
}

/**
 * What earlier starts of this Run's sidecar stored: where the audit continues (the last chunk its ledger lists, with
 * the text the ledger vouches for, or none when that chunk no longer holds it: the sequence goes on after it), the
 * ledger itself, the result and the runtime's warnings.
 */
export interface StoredRecords {
  readonly lastChunk?: { readonly index: number; readonly text: string | undefined };
  readonly auditLedger?: readonly AuditChunkDigest[];
  readonly result?: RunResult;
  readonly runtimeWarnings?: readonly string[];
  /** What the ledger did not vouch for at the last chunk (bytes after its entry, or a text that does not match). */
  readonly ignored?: string;
}

/** The sidecar's records of one Run in the cluster. */
export interface ClusterRecords {
  readStored(): Promise<StoredRecords>;
  /** Writes chunk `index` whole, then records its digest in `status.audit`. */
  writeAuditChunk(index: number, text: string): Promise<void>;
  writeResult(text: string): Promise<void>;
  /** Applies `status.result` alone, under {@link SIDECAR_RESULT_FIELD_MANAGER}. */
  writeResultReference(result: RunResult): Promise<void>;
}

type ConfigMap = { metadata?: { ownerReferences?: { uid?: string }[] }; data?: Record<string, string> };
type RunObject = { metadata?: { uid?: string }; status?: { result?: unknown; runtimeWarnings?: unknown; audit?: unknown } };

/** How often a name someone else took is deleted and created again before the write fails (and is retried later). */
const CREATE_ATTEMPTS = 3;

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
  // The ledger as the Run's status holds it, and the audit names this sidecar made (or the ledger lists).
  let ledger: readonly AuditChunkDigest[] = [];
  const made = new Set<string>();
  const { create, write } = createConfigMapWriter(at, runUid, made);
  const applyStatus = async (manager: string, status: Record<string, unknown>): Promise<void> => {
    const run = { apiVersion: API_VERSION, kind: KIND.run, metadata: { name: at.run, namespace: at.namespace }, status };
    await at.client.request("PATCH", buildPath(RESOURCES.run, at.namespace, at.run, "status"), {
      query: { fieldManager: manager, force: true, fieldValidation: "Strict" },
      body: run,
      contentType: "application/apply-patch+yaml",
    });
  };
  return {
    async readStored() {
      const run = at.read !== undefined ? parseRun(at, at.read as RunObject) : await readRun(at);
      uid ??= Promise.resolve(run.uid);
      ledger = run.audit;
      for (const entry of ledger) made.add(entry.name);
      const last = await readLastChunk(at, ledger);
      const warnings = run.runtimeWarnings.length > 0 ? { runtimeWarnings: run.runtimeWarnings } : {};
      return {
        ...(last === undefined ? {} : { lastChunk: last.chunk, ...(last.ignored === undefined ? {} : { ignored: last.ignored }) }),
        ...(ledger.length === 0 ? {} : { auditLedger: ledger }),
        ...(run.result === undefined ? {} : { result: run.result }),
        ...warnings,
      };
    },
    async writeAuditChunk(index, text) {
      const name = buildAuditChunkName(at.run, index);
      await write(name, COMPONENT.audit, { [AUDIT_CHUNK_KEY]: text });
      const next = recordChunkDigest(ledger, computeChunkDigest(name, text));
      await applyStatus(SIDECAR_AUDIT_FIELD_MANAGER, { audit: { chunks: next } });
      ledger = next;
    },
    // Written once per accepted output, whole: always created by this sidecar.
    writeResult: (text) => create(buildChildNames(at.run).result, COMPONENT.result, { [RESULT_KEY]: text }),
    writeResultReference: (result) => applyStatus(SIDECAR_RESULT_FIELD_MANAGER, { result }),
  };
}

/**
 * How the sidecar writes its ConfigMaps: `create` makes one whole (deleting an object someone else left under the
 * name first); `write` changes a name in `made` in place and creates any other, adding it to `made`.
 */
function createConfigMapWriter(at: RunLocation, runUid: () => Promise<string>, made: Set<string>) {
  const path = (name: string) => buildPath(RESOURCES.configMap, at.namespace, name);
  const unlessGone = (err: unknown) => {
    if (!isApiStatus(err, 404)) throw err;
  };
  const body = async (name: string, component: string, data: Record<string, string>) => ({
    apiVersion: "v1", kind: "ConfigMap",
    metadata: {
      name, namespace: at.namespace,
      labels: { [LABEL.run]: buildLabelValue(at.run), [LABEL.component]: component, [LABEL.managedBy]: SIDECAR_FIELD_MANAGER },
      // Not the controller: the Run's children the controller manages are pruned, these must stay.
      ownerReferences: [{ apiVersion: API_VERSION, kind: KIND.run, name: at.run, uid: await runUid(), controller: false, blockOwnerDeletion: false }],
    },
    data,
  });
  const apply = async (name: string, component: string, data: Record<string, string>): Promise<void> => {
    await at.client.request("PATCH", path(name), {
      query: { fieldManager: SIDECAR_FIELD_MANAGER, force: true, fieldValidation: "Strict" },
      body: await body(name, component, data),
      contentType: "application/apply-patch+yaml",
    });
  };
  // Created by this sidecar, whole: an object someone else left under the name (immutable, oversized, with keys
  // or finalizers of its own) is deleted first, its finalizers cleared so the deletion is not held, so no one
  // else's object can stop the write or pass for the sidecar's.
  const create = async (name: string, component: string, data: Record<string, string>): Promise<void> => {
    const object = await body(name, component, data);
    for (let attempt = 1; ; attempt++) {
      try {
        await at.client.request("POST", buildPath(RESOURCES.configMap, at.namespace), { query: { fieldManager: SIDECAR_FIELD_MANAGER, fieldValidation: "Strict" }, body: object });
        return;
      } catch (err) {
        if (!isApiStatus(err, 409) || attempt >= CREATE_ATTEMPTS) throw err;
      }
      await at.client.request("PATCH", path(name), { body: { metadata: { finalizers: null } }, contentType: "application/merge-patch+json" }).catch(unlessGone);
      await at.client.request("DELETE", path(name)).catch(unlessGone);
    }
  };
  // A name this sidecar made is changed in place; if that is refused (someone replaced the object with one that
  // cannot be changed), it is made again.
  const write = async (name: string, component: string, data: Record<string, string>): Promise<void> => {
    if (made.has(name)) {
      try {
        await apply(name, component, data);
        return;
      } catch (err) {
        if (!isApiStatus(err, 409) && !isApiStatus(err, 422)) throw err;
      }
    }
    await create(name, component, data);
    made.add(name);
  };
  return { create, write };
}

/**
 * The Run's uid, its stored result (checked against the schema: a result that does not parse fails the start), the
 * sidecar's audit ledger (likewise) and the runtime's warnings an earlier start reported (strings only: they are
 * shown, never acted on).
 */
async function readRun(at: RunLocation): Promise<StoredRun> {
  return parseRun(at, await at.client.request<RunObject>("GET", buildPath(RESOURCES.run, at.namespace, at.run)));
}

type StoredRun = { uid: string; result: RunResult | undefined; audit: readonly AuditChunkDigest[]; runtimeWarnings: string[] };

/** What the records go on from, in the Run as read; what does not parse fails the start. */
function parseRun(at: RunLocation, r: RunObject): StoredRun {
  if (!r.metadata?.uid) throw new Error(`Run '${at.run}' has no uid`);
  const stored = r.status?.runtimeWarnings;
  const runtimeWarnings = Array.isArray(stored) ? stored.filter((w): w is string => typeof w === "string") : [];
  const audit = RunAuditStatusSchema.safeParse(r.status?.audit ?? { chunks: [] });
  if (!audit.success) throw new Error(`Run '${at.run}': status.audit is not an audit ledger: ${audit.error.issues[0]?.message ?? "invalid"}`);
  if (r.status?.result === undefined) return { uid: r.metadata.uid, result: undefined, audit: audit.data.chunks, runtimeWarnings };
  const parsed = RunResultSchema.safeParse(r.status.result);
  if (!parsed.success) throw new Error(`Run '${at.run}': status.result is not a result: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return { uid: r.metadata.uid, result: parsed.data, audit: audit.data.chunks, runtimeWarnings };
}

/**
 * Where the audit continues: the last chunk the ledger lists, with the text its entry vouches for (a restart after
 * a chunk write whose ledger update never happened drops those unrecorded bytes), or without text when the chunk
 * is gone or no longer matches (the sequence goes on after it, and the chunk stays as it is for a person to see).
 * Any error but 404 fails the start: the sidecar never writes over what it could not read. A name the ledger does
 * not list is never read: whatever is there was not written by this Run's sidecar, and is replaced when the
 * sequence reaches it.
 */
async function readLastChunk(at: RunLocation, ledger: readonly AuditChunkDigest[]): Promise<{ chunk: NonNullable<StoredRecords["lastChunk"]>; ignored?: string } | undefined> {
  const entry = ledger.at(-1);
  if (entry === undefined) return undefined;
  const index = Array.from({ length: MAX_AUDIT_CHUNKS }, (_, i) => buildAuditChunkName(at.run, i)).indexOf(entry.name);
  if (index < 0) throw new Error(`status.audit names '${entry.name}', which is not one of this Run's audit ConfigMaps`);
  const cm = await at.client.request<ConfigMap>("GET", buildPath(RESOURCES.configMap, at.namespace, entry.name)).catch((err: unknown) => {
    if (isApiStatus(err, 404)) return undefined;
    throw new Error(`reading the audit ConfigMap '${entry.name}' failed: ${(err as Error).message}`);
  });
  const { verified, extraBytes } = verifyChunk(entry, cm?.data?.[AUDIT_CHUNK_KEY]);
  if (verified === undefined) return { chunk: { index, text: undefined }, ignored: `'${entry.name}' ${cm === undefined ? "is missing" : "does not hold what status.audit records"}; the audit continues after it` };
  return { chunk: { index, text: verified }, ...(extraBytes > 0 ? { ignored: `${extraBytes} byte(s) at the end of '${entry.name}' are not in status.audit and are dropped` } : {}) };
}
