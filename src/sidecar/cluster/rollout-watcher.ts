// The policy rollout reaching a running Run's sidecar (docs/operations.md, "Rolling out a policy"): the sidecar
// reads its Run's `status.policyRollout` and, for a snapshot it names that differs from the one in force, fetches
// its ConfigMap and hands its bytes to the rollout only when they match the digest the status records. Nothing is
// restarted: the next call is decided under it.
import { createHash } from "node:crypto";
import type { RunPolicyRollout } from "../../api/status.ts";
import type { KubeClient } from "../../kube/client.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import type { Logger } from "../../log/logger.ts";
import { ROLLOUT_ROLES, type RolloutRole } from "../../sandbox/rollout-snapshot.ts";
import { SNAPSHOT_KEY } from "../../sandbox/run-snapshot.ts";
import type { PolicyRollout } from "../core/policy-rollout.ts";

/** Options of {@link startRolloutWatcher}. */
export interface RolloutWatcherOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
  readonly log: Logger;
  readonly rollout: PolicyRollout;
  readonly intervalMs?: number;
}

/** Offers the snapshot the status names for `role`, when it is not the one in force and was not tried already. */
async function offerNamed(opts: RolloutWatcherOptions, tried: Set<string>, role: RolloutRole, named: RunPolicyRollout): Promise<void> {
  const at = named[role];
  if (at === undefined) return;
  const enforcement = role === "candidate" ? named.candidate?.enforcement : undefined;
  const current = opts.rollout.entry(role);
  const key = `${role}:${at.snapshotSha256}:${enforcement ?? ""}`;
  if ((current?.sha256 === at.snapshotSha256 && current.enforcement === enforcement) || tried.has(key)) return;
  const cm = await opts.client.request<{ data?: Record<string, string> }>("GET", buildPath(RESOURCES.configMap, opts.namespace, at.snapshot));
  const text = cm.data?.[SNAPSHOT_KEY.runPolicy];
  if (text === undefined || createHash("sha256").update(text, "utf8").digest("hex") !== at.snapshotSha256) {
    opts.log.error({ role, snapshot: at.snapshot }, "policy rollout snapshot does not match the digest in the Run's status; not used");
    return;
  }
  tried.add(key);
  opts.rollout.offer(role, { generation: at.generation, sha256: at.snapshotSha256, text, ...(enforcement ? { enforcement } : {}) });
}

/** Looks at the Run's `status.policyRollout` once; `tried`: the snapshots (role, digest, mode) already offered. */
export async function checkRollout(opts: RolloutWatcherOptions, tried: Set<string>): Promise<void> {
  const run = await opts.client.request<{ status?: { policyRollout?: RunPolicyRollout } }>("GET", buildPath(RESOURCES.run, opts.namespace, opts.run));
  const named = run.status?.policyRollout ?? {};
  if (named.candidate === undefined) opts.rollout.withdrawCandidate();
  for (const role of ROLLOUT_ROLES) await offerNamed(opts, tried, role, named);
}

/** Checks every `intervalMs` (default 2 s) until stopped; failures are logged and retried. */
export function startRolloutWatcher(opts: RolloutWatcherOptions): { stop(): void } {
  const tried = new Set<string>();
  const tick = () => checkRollout(opts, tried).catch((err: unknown) => opts.log.warn({ err: (err as Error).message }, "reading the Run's policy rollout failed; retrying"));
  const timer = setInterval(() => void tick(), opts.intervalMs ?? 2000);
  timer.unref();
  void tick();
  return { stop: () => clearInterval(timer) };
}
