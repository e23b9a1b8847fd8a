// In a cluster, people answer prompts with Approval resources (a separate kind, so RBAC can grant "may
// approve" without "may edit runs"). The controller binds each Approval to the uid of the Run it names; the
// sidecar watches only the Approvals bound to its own Run's uid (a label selector on one namespace, not a
// namespace-wide LIST loop), applies those naming a pending prompt, and marks each one consumed.
import { ApprovalSpecSchema, type ApprovalDecision } from "../../api/approval.ts";
import { LABEL } from "../../api/constants.ts";
import type { KubeClient } from "../../kube/client.ts";
import { createInformer } from "../../kube/informer.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import type { Logger } from "../../log/logger.ts";

/** An Approval as watched. */
type ApprovalObject = KubeObject & { spec?: unknown; status?: { consumed?: boolean } };

/** Who answered and why, as the audit record of the answered decision keeps them. */
export interface ApprovalAnswerer {
  approvedBy?: string | undefined;
  reason?: string | undefined;
}

/** What the watcher needs from the sidecar. */
export interface ApprovalTarget {
  isPending(id: string): boolean;
  answer(id: string, decision: ApprovalDecision, answerer: ApprovalAnswerer): boolean;
}

/** Options of {@link startApprovalWatcher}. */
export interface ApprovalWatcherOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
  readonly target: ApprovalTarget;
  readonly log: Logger;
  readonly clock: () => number;
}

/** The largest Run object the sidecar reads to learn its uid. */
const MAX_RUN_BYTES = 4 * 1024 * 1024;
const RETRY_MS = 2000;

async function markConsumed(opts: ApprovalWatcherOptions, name: string, message: string): Promise<void> {
  const path = buildPath(RESOURCES.approval, opts.namespace, name, "status");
  const status = { consumed: true, consumedAt: new Date(opts.clock()).toISOString(), message };
  await opts.client.request("PATCH", path, { body: { status }, contentType: "application/merge-patch+json" });
}

/**
 * Applies one Approval bound to this Run, at most once per uid: the answer settles its prompt (or the Approval
 * names none pending), then it is marked consumed with what happened.
 */
export async function applyApproval(opts: ApprovalWatcherOptions, item: ApprovalObject, handled: Set<string>): Promise<boolean> {
  const uid = item.metadata.uid ?? item.metadata.name;
  if (item.status?.consumed === true || handled.has(uid)) return false;
  const spec = ApprovalSpecSchema.safeParse(item.spec);
  if (!spec.success || spec.data.runRef.name !== opts.run) return false;
  handled.add(uid);
  const { approvalId, decision, reason, approvedBy } = spec.data;
  const ok = opts.target.isPending(approvalId) && opts.target.answer(approvalId, decision, { approvedBy, reason });
  opts.log.info({ approval: item.metadata.name, approvalId, decision, approvedBy, applied: ok }, "approval resource seen");
  await markConsumed(opts, item.metadata.name, ok ? `applied: ${decision}` : `no pending prompt '${approvalId}' (already answered or expired)`);
  return ok;
}

/** The Run's uid, read once (the Role lets the sidecar get its own Run by name). */
async function readRunUid(opts: ApprovalWatcherOptions): Promise<string> {
  const run = await opts.client.request<KubeObject>("GET", buildPath(RESOURCES.run, opts.namespace, opts.run), { maxResponseBytes: MAX_RUN_BYTES });
  if (!run.metadata.uid) throw new Error(`Run '${opts.run}' has no uid`);
  return run.metadata.uid;
}

/** Watches this Run's Approvals until stopped; API errors are logged and the watch restarts by itself. */
export function startApprovalWatcher(opts: ApprovalWatcherOptions): { stop(): void } {
  let stopped = false;
  let stopInformer: (() => Promise<void>) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const handled = new Set<string>();
  const begin = async () => {
    const uid = await readRunUid(opts);
    if (stopped) return;
    const informer = createInformer<ApprovalObject>(opts.client, RESOURCES.approval, {
      namespace: opts.namespace,
      labelSelector: `${LABEL.runUid}=${uid}`,
      onError: (_res, err, retryInMs) => opts.log.warn({ err: (err as Error).message, retryInMs }, "watching Approvals failed; restarting"),
    });
    informer.on((event, item) => {
      if (event === "delete") return;
      applyApproval(opts, item, handled).catch((err: unknown) => opts.log.warn({ err: (err as Error).message, approval: item.metadata.name }, "applying an Approval failed"));
    });
    stopInformer = () => informer.stop();
    await informer.start();
  };
  const attempt = () => {
    begin().catch((err: unknown) => {
      opts.log.warn({ err: (err as Error).message }, "reading the Run for its Approvals failed; retrying");
      if (!stopped) timer = setTimeout(attempt, RETRY_MS).unref();
    });
  };
  attempt();
  return {
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      void stopInformer?.();
    },
  };
}
