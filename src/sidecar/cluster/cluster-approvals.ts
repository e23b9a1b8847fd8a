// In a cluster, people answer prompts with Approval resources (a separate kind, so RBAC can grant "may
// approve" without "may edit runs"). The sidecar never reads them: the Approval controller binds each to the uid of
// the Run it names and relays the answers bound to this Run into the ConfigMap `<run>-approvals`, the one object of
// that kind the sidecar's Role lets it get and watch (by name). The sidecar applies those naming a pending prompt
// and marks each Approval consumed (admission lets it write the status only of Approvals bound to its Run).
import { APPROVAL_RELAY_KEY, ApprovalRelayEntrySchema, type ApprovalDecision, type ApprovalRelayEntry } from "../../api/approval.ts";
import type { KubeClient } from "../../kube/client.ts";
import { createInformer } from "../../kube/informer.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import type { Logger } from "../../log/logger.ts";
import { buildChildNames } from "../../sandbox/names.ts";
import { APPROVAL_WITHDRAWN, buildWithdrawnAnswerMessage } from "../core/approvals.ts";

/** The relay ConfigMap as watched. */
type RelayObject = KubeObject & { data?: Record<string, string> };

/** Who answered and why, as the audit record of the answered decision keeps them. */
export interface ApprovalAnswerer {
  approvedBy?: string | undefined;
  reason?: string | undefined;
}

/** What the watcher needs from the sidecar. */
export interface ApprovalTarget {
  isPending(id: string): boolean;
  /** Whether the prompt was withdrawn (its call's client gave up): its answer is refused as such. */
  isWithdrawn(id: string): boolean;
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

/** Why an answer was not applied, as the Approval's consumed message says it. */
function describeUnapplied(target: ApprovalTarget, approvalId: string): string {
  if (target.isWithdrawn(approvalId)) return `${APPROVAL_WITHDRAWN}: ${buildWithdrawnAnswerMessage(approvalId)}`;
  return `no pending prompt '${approvalId}' (already answered or expired)`;
}

/**
 * Applies one relayed answer, at most once per Approval uid: the answer settles its prompt (or the Approval names
 * none pending), then the Approval is marked consumed with what happened.
 */
export async function applyApproval(opts: ApprovalWatcherOptions, approvalUid: string, entry: ApprovalRelayEntry, handled: Set<string>): Promise<boolean> {
  if (handled.has(approvalUid)) return false;
  handled.add(approvalUid);
  const { approval, approvalId, decision, reason, approvedBy } = entry;
  const ok = opts.target.isPending(approvalId) && opts.target.answer(approvalId, decision, { approvedBy, reason });
  opts.log.info({ approval, approvalId, decision, approvedBy, applied: ok }, "approval resource seen");
  await markConsumed(opts, approval, ok ? `applied: ${decision}` : describeUnapplied(opts.target, approvalId));
  return ok;
}

/** The answers of a relay written for this Run's uid (one left by an earlier Run of this name holds none). */
export function parseRelay(relay: RelayObject, runUid: string): [string, ApprovalRelayEntry][] {
  const data = relay.data ?? {};
  if (data[APPROVAL_RELAY_KEY.runUid] !== runUid) return [];
  const out: [string, ApprovalRelayEntry][] = [];
  for (const [key, text] of Object.entries(data)) {
    if (!key.startsWith(APPROVAL_RELAY_KEY.answerPrefix)) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      continue;
    }
    const entry = ApprovalRelayEntrySchema.safeParse(parsed);
    if (entry.success) out.push([key.slice(APPROVAL_RELAY_KEY.answerPrefix.length), entry.data]);
  }
  return out;
}

/** The Run's uid, read once (the Role lets the sidecar get its own Run by name). */
async function readRunUid(opts: ApprovalWatcherOptions): Promise<string> {
  const run = await opts.client.request<KubeObject>("GET", buildPath(RESOURCES.run, opts.namespace, opts.run), { maxResponseBytes: MAX_RUN_BYTES });
  if (!run.metadata.uid) throw new Error(`Run '${opts.run}' has no uid`);
  return run.metadata.uid;
}

/** Watches this Run's relayed answers until stopped; API errors are logged and the watch restarts by itself. */
export function startApprovalWatcher(opts: ApprovalWatcherOptions): { stop(): void } {
  let stopped = false;
  let stopInformer: (() => Promise<void>) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const handled = new Set<string>();
  const begin = async () => {
    const uid = await readRunUid(opts);
    if (stopped) return;
    // A watch of one object by name: RBAC authorizes it against the Role's resourceNames.
    const informer = createInformer<RelayObject>(opts.client, RESOURCES.configMap, {
      namespace: opts.namespace,
      fieldSelector: `metadata.name=${buildChildNames(opts.run).approvals}`,
      onError: (_res, err, retryInMs) => opts.log.warn({ err: (err as Error).message, retryInMs }, "watching the approval relay failed; restarting"),
    });
    informer.on((event, relay) => {
      if (event === "delete") return;
      for (const [approvalUid, entry] of parseRelay(relay, uid)) {
        applyApproval(opts, approvalUid, entry, handled).catch((err: unknown) => opts.log.warn({ err: (err as Error).message, approval: entry.approval }, "applying an Approval failed"));
      }
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
