// A resumed Run (docs/controller.md, "Resuming a Run"): the controller re-resolved its read-path grants into a new
// immutable ConfigMap and recorded its name and SHA-256 in `status.resume`. The sidecar watches its Run, fetches that
// ConfigMap, and switches to it through the policy holder (so labels, taint, approvals and audit carry on) only when
// the bytes match the digest and nothing but the grants differs from the snapshot pinned at start.
import { createHash } from "node:crypto";
import type { RunResumeStatus } from "../../api/status.ts";
import type { KubeClient } from "../../kube/client.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import type { Logger } from "../../log/logger.ts";
import { checkResumedRunPolicy, parseResumedRunPolicy, RESUME_SNAPSHOT_KEY } from "../../sandbox/resume-snapshot.ts";
import type { PolicySource } from "./policy-sources.ts";

/** A resumed snapshot as fetched: its ConfigMap, the digest the Run's status recorded, and its `run-policy.json`. */
export interface ResumedSnapshot {
  readonly name: string;
  readonly sha256: string;
  readonly text: string;
}

/** The base run policy, or the last resumed snapshot offered once it checks out against the base. */
export function createResumableSource(base: PolicySource): { source: PolicySource; offer(snapshot: ResumedSnapshot): void; offered(): ResumedSnapshot | undefined } {
  let resumed: ResumedSnapshot | undefined;
  const source: PolicySource = {
    description: base.description,
    fingerprint: () => `${base.fingerprint()}:${resumed?.sha256 ?? ""}`,
    load() {
      const loaded = base.load();
      if (!loaded.ok || resumed === undefined) return loaded;
      const parsed = parseResumedRunPolicy(resumed.text);
      if (!parsed.ok) return { ok: false, error: `resumed snapshot '${resumed.name}': ${parsed.message}` };
      const why = checkResumedRunPolicy(loaded.value, parsed.value);
      if (why !== undefined) return { ok: false, error: `resumed snapshot '${resumed.name}' refused: ${why}` };
      return { ok: true, value: parsed.value, warnings: loaded.warnings };
    },
  };
  return { source, offer: (s) => void (resumed = s), offered: () => resumed };
}

/** SHA-256 (hex) of a snapshot's text. */
function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Options of {@link startResumeWatcher}. */
export interface ResumeWatcherOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
  readonly log: Logger;
  readonly intervalMs?: number;
  /** The snapshot in force (undefined: the one pinned at start). */
  readonly current: () => string | undefined;
  /** A verified snapshot to switch to. */
  readonly switchTo: (snapshot: ResumedSnapshot) => void;
}

/** Looks at the Run's `status.resume` once; a new snapshot whose bytes match its digest is handed to `switchTo`. */
export async function checkResume(opts: ResumeWatcherOptions): Promise<void> {
  const run = await opts.client.request<{ status?: { resume?: RunResumeStatus } }>("GET", buildPath(RESOURCES.run, opts.namespace, opts.run));
  const resume = run.status?.resume;
  if (resume?.snapshot === undefined || resume.snapshotSha256 === undefined || resume.snapshotSha256 === opts.current()) return;
  const cm = await opts.client.request<{ data?: Record<string, string> }>("GET", buildPath(RESOURCES.configMap, opts.namespace, resume.snapshot));
  const text = cm.data?.[RESUME_SNAPSHOT_KEY.runPolicy];
  if (text === undefined || sha256(text) !== resume.snapshotSha256) {
    opts.log.error({ snapshot: resume.snapshot }, "resumed snapshot does not match the digest in the Run's status; keeping the policy in force");
    return;
  }
  opts.switchTo({ name: resume.snapshot, sha256: resume.snapshotSha256, text });
}

/** Checks every `intervalMs` (default 2 s) until stopped; failures are logged and retried; each snapshot is tried once. */
export function startResumeWatcher(opts: ResumeWatcherOptions): { stop(): void } {
  const tried = new Set<string>();
  const once: ResumeWatcherOptions = {
    ...opts,
    current: () => opts.current(),
    switchTo: (s) => {
      if (tried.has(s.sha256)) return;
      tried.add(s.sha256);
      opts.switchTo(s);
    },
  };
  const tick = () => checkResume(once).catch((err: unknown) => opts.log.warn({ err: (err as Error).message }, "reading the Run's resume status failed; retrying"));
  const timer = setInterval(() => void tick(), opts.intervalMs ?? 2000);
  timer.unref();
  void tick();
  return { stop: () => clearInterval(timer) };
}
