// The cluster side of `leviath sidecar`: the records an earlier start stored (audit chunks, the result, the runtime's
// warnings), and the watches and reports that run beside the server (resumed snapshots, Approvals, the Run's
// status, audit flushes).
import type { KubeClient } from "../kube/client.ts";
import type { Logger } from "../log/logger.ts";
import { buildChildNames } from "../sandbox/names.ts";
import type { startApprovalWatcher } from "../sidecar/cluster/cluster-approvals.ts";
import { createClusterRecords } from "../sidecar/cluster/cluster-records.ts";
import { startResumeWatcher, type createResumableSource } from "../sidecar/cluster/resumed-snapshot.ts";
import { startRolloutWatcher } from "../sidecar/cluster/rollout-watcher.ts";
import { createRunStatusReporter, startRunStatusReporter } from "../sidecar/cluster/run-status-reporter.ts";
import { createResultSink } from "../sidecar/core/run-result.ts";
import type { SidecarServerOptions } from "../sidecar/build-sidecar.ts";
import type { RunningSidecar } from "../sidecar/server.ts";
import { AuditChunks } from "../sidecar/storage/audit-chunks.ts";
import type { CliIo } from "./io.ts";

type Resumable = ReturnType<typeof createResumableSource>;

/** The Run whose records these are, and where a note about a record not continued goes. */
interface RecordsAt {
  readonly namespace: string;
  readonly run: string;
  readonly warn: (detail: string) => void;
  /** The Run as just read (a bound pool pod's binding check): the records go on from it instead of reading it again. */
  readonly read?: unknown;
}

/** How often the audit ConfigMaps are brought up to date while the sidecar runs. */
const AUDIT_FLUSH_MS = 1000;

/**
 * The cluster side of the sidecar's records: audit lines to stdout and the audit ConfigMaps, the result sink. A
 * restart carries on from what earlier starts stored (the audit sequence after the last chunk `status.audit`
 * vouches for, the result); a start that cannot read it fails rather than write over it, and `warn` hears what of
 * the last chunk was not the sidecar's.
 */
async function clusterRecords(client: KubeClient, at: RecordsAt, io: CliIo): Promise<{ chunks: AuditChunks; options: Pick<SidecarServerOptions, "auditOutputs" | "result" | "runtimeWarnings"> }> {
  const { namespace, run, warn } = at;
  const records = createClusterRecords({ client, namespace, run, ...(at.read !== undefined ? { read: at.read } : {}) });
  const stored = await records.readStored();
  const chunks = new AuditChunks((index, text) => records.writeAuditChunk(index, text));
  if (stored.lastChunk !== undefined) chunks.resume(stored.lastChunk.index, stored.lastChunk.text);
  // Owned by the result's own field manager from now on, whoever wrote it before.
  if (stored.result !== undefined) await records.writeResultReference(stored.result);
  const stdout = (line: string): boolean => {
    io.stdout(line);
    return true;
  };
  const result = createResultSink(buildChildNames(run).result, { external: records.writeResult, reference: records.writeResultReference }, stored.result);
  const warnings = stored.runtimeWarnings === undefined ? {} : { runtimeWarnings: stored.runtimeWarnings };
  if (stored.ignored !== undefined) warn(stored.ignored);
  return { chunks, options: { auditOutputs: [stdout, (line) => chunks.accept(line)], result, ...warnings } };
}

/** The cluster records (none standalone), or why what an earlier start stored could not be read. */
export function openClusterRecords(client: KubeClient | undefined, at: RecordsAt, io: CliIo): Promise<Awaited<ReturnType<typeof clusterRecords>> | Error | undefined> {
  if (client === undefined) return Promise.resolve(undefined);
  return clusterRecords(client, at, io).catch((err: unknown) => new Error(`cannot read the records an earlier start of this Run's sidecar stored: ${(err as Error).message}`));
}

/**
 * How long a warm pool pod's Run's sidecar waits after its listen before it starts its watches and status reports
 * (docs/benchmarks.md, "Warm, the hand-over measured step by step"): the runtime has its Run as the sidecar listens,
 * and its health check and first tool call come in the next moments; the watches' first requests (new TLS
 * connections, the lists) would take the pod's CPU from them. Nothing is missed meanwhile: each watch lists what is
 * there when it starts (an Approval answered, a resumed snapshot, a rollout), and the audit flushes from the start.
 */
export const POOL_WATCH_DELAY_MS = 1000;

/** Starts the cluster side of a running sidecar: resume and approval watches, status reports, audit flushes; returns its stop. */
export function startCluster(client: KubeClient, sidecar: RunningSidecar, chunks: AuditChunks, at: { namespace: string; run: string; log: Logger; resumable: Resumable | undefined; startApprovalWatcher: typeof startApprovalWatcher; watchDelayMs?: number | undefined }): () => Promise<void> {
  const flushAudit = () => chunks.flush().catch((err: unknown) => at.log.warn({ err: (err as Error).message }, "audit ConfigMap update failed; retrying"));
  const timer = setInterval(() => void flushAudit(), AUDIT_FLUSH_MS);
  timer.unref();
  let watches: ReturnType<typeof startWatches> | undefined;
  const start = () => void (watches = startWatches(client, sidecar, at));
  const delay = at.watchDelayMs ?? 0;
  const later = delay > 0 ? setTimeout(start, delay) : undefined;
  if (later === undefined) start();
  return async () => {
    clearInterval(timer);
    clearTimeout(later);
    watches?.stop();
    // The calls refused by the stop are recorded first, then everything goes out (the status too, reported once
    // when the stop came before the watches started).
    await sidecar.close();
    const { namespace, run, log } = at;
    const lastReport = watches?.reporter.stop() ?? createRunStatusReporter({ client, namespace, run, log, status: () => sidecar.status() }).report().then(() => undefined, (err: unknown) => log.warn({ err: (err as Error).message }, "Run status update failed"));
    await Promise.all([flushAudit(), lastReport]);
  };
}

/** The watches (resume, rollout, approvals) and the status reports: the watches' stop, and the reporter (its stop writes last). */
function startWatches(client: KubeClient, sidecar: RunningSidecar, at: { namespace: string; run: string; log: Logger; resumable: Resumable | undefined; startApprovalWatcher: typeof startApprovalWatcher }): { stop(): void; reporter: { stop(): Promise<void> } } {
  const { namespace, run, log, resumable, startApprovalWatcher } = at;
  const resume = resumable === undefined ? undefined : startResumeWatcher({
    client, namespace, run, log, current: () => resumable.offered()?.sha256,
    switchTo: (snapshot) => {
      resumable.offer(snapshot);
      if (sidecar.reloadPolicy() === "failed") log.error({ snapshot: snapshot.name }, "resumed snapshot refused; the policy in force stays");
    },
  });
  const { service, approvals, rollout: policyRollout } = sidecar.deps;
  const rollout = policyRollout === undefined ? undefined : startRolloutWatcher({ client, namespace, run, log, rollout: policyRollout });
  const watcher = startApprovalWatcher({
    client, namespace, run, log, clock: Date.now,
    target: { isPending: (id) => approvals.get(id) !== undefined, isWithdrawn: (id) => approvals.isWithdrawn(id), answer: (id, d, who) => service.answer(id, d, who.reason, who.approvedBy) },
  });
  const reporter = startRunStatusReporter({ client, namespace, run, log, status: () => sidecar.status() });
  return {
    reporter,
    stop: () => {
      watcher.stop();
      resume?.stop();
      rollout?.stop();
    },
  };
}

