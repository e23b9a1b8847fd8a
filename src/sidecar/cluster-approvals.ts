// In a cluster, people answer prompts with Approval resources (a separate kind, so RBAC can grant "may
// approve" without "may edit runs"). The sidecar polls its namespace's Approvals for its Run, applies those
// naming a pending prompt, and marks each one consumed with what happened.
import { ApprovalSpecSchema } from "../api/approval.ts";
import type { KubeClient } from "../kube/client.ts";
import { buildPath, RESOURCES } from "../kube/resources.ts";
import type { Logger } from "../log/logger.ts";

/** An Approval as listed. */
interface ApprovalObject {
  metadata: { name: string; namespace?: string };
  spec?: unknown;
  status?: { consumed?: boolean };
}

/** What the watcher needs from the sidecar. */
export interface ApprovalTarget {
  isPending(id: string): boolean;
  answer(id: string, decision: "allowOnce" | "allowForStage" | "allowForRun" | "deny", reason?: string): boolean;
}

/** Options of {@link startApprovalWatcher}. */
export interface ApprovalWatcherOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
  readonly target: ApprovalTarget;
  readonly log: Logger;
  readonly clock: () => number;
  readonly intervalMs?: number;
}

async function markConsumed(opts: ApprovalWatcherOptions, name: string, message: string): Promise<void> {
  const path = buildPath(RESOURCES.approval, opts.namespace, name, "status");
  const status = { consumed: true, consumedAt: new Date(opts.clock()).toISOString(), message };
  await opts.client.request("PATCH", path, { body: { status }, contentType: "application/merge-patch+json" });
}

/** One pass: applies every unconsumed Approval of the run. Returns how many were applied. */
export async function applyApprovals(opts: ApprovalWatcherOptions): Promise<number> {
  const list = await opts.client.request<{ items: ApprovalObject[] }>("GET", buildPath(RESOURCES.approval, opts.namespace));
  let applied = 0;
  for (const item of list.items) {
    if (item.status?.consumed === true) continue;
    const spec = ApprovalSpecSchema.safeParse(item.spec);
    if (!spec.success || spec.data.runRef.name !== opts.run) continue;
    const { approvalId, decision, reason } = spec.data;
    const pending = opts.target.isPending(approvalId);
    const ok = pending && opts.target.answer(approvalId, decision, reason);
    if (ok) applied++;
    opts.log.info({ approval: item.metadata.name, approvalId, decision, applied: ok }, "approval resource seen");
    await markConsumed(opts, item.metadata.name, ok ? `applied: ${decision}` : `no pending prompt '${approvalId}' (already answered or expired)`);
  }
  return applied;
}

/** Polls until stopped; API errors are logged and retried on the next tick. */
export function startApprovalWatcher(opts: ApprovalWatcherOptions): { stop(): void } {
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      await applyApprovals(opts);
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, "listing Approvals failed; retrying");
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), opts.intervalMs ?? 2000);
  timer.unref();
  void tick();
  return { stop: () => clearInterval(timer) };
}
