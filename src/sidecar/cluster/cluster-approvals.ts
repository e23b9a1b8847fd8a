// In a cluster, people answer prompts with Approval resources (a separate kind, so RBAC can grant "may
// approve" without "may edit runs"). RBAC cannot narrow a list or watch of Approvals to one Run's, so the Approval
// controller binds each to the uid of the Run it names and relays the bound ones into the ConfigMap
// `<run>-approvals`, which the sidecar's Role lets it watch by name. That relay is only a pointer: others may write
// ConfigMaps too. For each Approval it names, the sidecar reads the Approval itself (the controller's
// approval-reader Role grants `get` on exactly those), checks that it is bound to this Run and unconsumed
// (relayed-approval.ts), answers the pending prompt with what the Approval says and marks it consumed (admission
// lets it write the status only of Approvals bound to its Run).
import { buildRefusalMessage, type RefusalCode } from "../../api/sidecar-contract.ts";
import { APPLIED_MESSAGE_PREFIX, APPROVAL_RELAY_KEY, ApprovalRelayEntrySchema, MAX_RELAYED_ANSWERS, type ApprovalDecision, type ApprovalRelayEntry } from "../../api/approval.ts";
import type { KubeClient } from "../../kube/client.ts";
import { isApiStatus } from "../../kube/errors.ts";
import { createInformer } from "../../kube/informer.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import type { Logger } from "../../log/logger.ts";
import { buildChildNames } from "../../sandbox/names.ts";
import { checkRelayedApproval, type ReadApproval, type RelayedRef } from "./relayed-approval.ts";

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

/** The largest Run or Approval object the sidecar reads. */
const MAX_OBJECT_BYTES = 4 * 1024 * 1024;
const RETRY_MS = 2000;
/** Reads of a relayed Approval refused (403) before the answer is left until the relay changes again. */
const READ_ATTEMPTS = 5;
const READ_RETRY_MS = 500;

async function markConsumed(opts: ApprovalWatcherOptions, name: string, message: string): Promise<void> {
  const path = buildPath(RESOURCES.approval, opts.namespace, name, "status");
  const status = { consumed: true, consumedAt: new Date(opts.clock()).toISOString(), message };
  await opts.client.request("PATCH", path, { body: { status }, contentType: "application/merge-patch+json" });
}

/** Why an answer was not applied, as the Approval's consumed message says it. */
function describeUnapplied(target: ApprovalTarget, approvalId: string): string {
  const withdrawn = "approval-withdrawn" satisfies RefusalCode;
  if (target.isWithdrawn(approvalId)) return `${withdrawn}: ${buildRefusalMessage(withdrawn, approvalId)}`;
  return `no pending prompt '${approvalId}' (already answered or expired)`;
}

/**
 * The Approval a relay entry names, read from the API server (undefined: there is none). A 403 is retried a few
 * times: the controller writes the Role that names it just before the relay, and the API server's authorizer may
 * not have it yet; an Approval the Role never names (a key someone else wrote) stays refused.
 */
async function readRelayedApproval(opts: ApprovalWatcherOptions, name: string): Promise<ReadApproval | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await opts.client.request<ReadApproval>("GET", buildPath(RESOURCES.approval, opts.namespace, name), { maxResponseBytes: MAX_OBJECT_BYTES });
    } catch (err) {
      if (isApiStatus(err, 404)) return undefined;
      if (!isApiStatus(err, 403) || attempt === READ_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, READ_RETRY_MS));
    }
  }
}

/**
 * Applies one relayed answer, at most once per Approval: only when the Approval it names, read back, is bound to
 * this Run and unconsumed; then its own answer settles its prompt (or it names none pending) and it is marked
 * consumed with what happened. An entry that fails the check is logged and left (a later relay tries it again).
 */
export async function applyApproval(opts: ApprovalWatcherOptions, ref: RelayedRef, handled: Set<string>): Promise<boolean> {
  const key = `${ref.approvalUid}/${ref.approval}`;
  if (handled.has(key)) return false;
  handled.add(key);
  let checked: ReturnType<typeof checkRelayedApproval>;
  try {
    checked = checkRelayedApproval(await readRelayedApproval(opts, ref.approval), ref);
  } catch (err) {
    checked = { refused: `reading Approval '${ref.approval}' failed: ${(err as Error).message}` };
  }
  if ("refused" in checked) {
    handled.delete(key);
    opts.log.warn({ approval: ref.approval, reason: checked.refused }, "relayed answer not applied: its Approval does not answer this Run");
    return false;
  }
  const { approvalId, decision, reason, approvedBy } = checked.spec;
  const ok = opts.target.isPending(approvalId) && opts.target.answer(approvalId, decision, { approvedBy, reason });
  opts.log.info({ approval: ref.approval, approvalId, decision, approvedBy, applied: ok }, "approval resource seen");
  await markConsumed(opts, ref.approval, ok ? `${APPLIED_MESSAGE_PREFIX}${decision}` : describeUnapplied(opts.target, approvalId));
  return ok;
}

/**
 * The entries of a relay written for this Run's uid (one left by an earlier Run of this name holds none), at most
 * {@link MAX_RELAYED_ANSWERS}; each still has to pass {@link applyApproval}'s check.
 */
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
    if (out.length === MAX_RELAYED_ANSWERS) break;
  }
  return out;
}

/** The Run's uid, read once (the Role lets the sidecar get its own Run by name). */
async function readRunUid(opts: ApprovalWatcherOptions): Promise<string> {
  const run = await opts.client.request<KubeObject>("GET", buildPath(RESOURCES.run, opts.namespace, opts.run), { maxResponseBytes: MAX_OBJECT_BYTES });
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
        const ref = { approvalUid, approval: entry.approval, run: opts.run, runUid: uid };
        applyApproval(opts, ref, handled).catch((err: unknown) => opts.log.warn({ err: (err as Error).message, approval: entry.approval }, "applying an Approval failed"));
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
