// The optional webhook of a pending prompt (issue 43): besides the Run's `PendingApproval` Event, the controller
// POSTs one JSON notice per prompt a Run reports in `status.pendingApprovals` to the URL the chart configures, so
// a person can be paged when the approver is away. The body is signed with HMAC-SHA256 under a key from a
// Secret (header `X-Leviath-Signature-256: sha256=<hex of the MAC of the exact body bytes>`), and a delivery is
// retried with exponential backoff on a network error, a 5xx or a 429, at most `maxAttempts` times; any other
// answer ends it. One delivery per prompt (remembered by the Run's uid and the prompt id, bounded), and at most
// `maxInFlight` deliveries at once (a notice past that is dropped and logged): an outage of the receiver costs a
// bounded number of requests, never a storm. A controller that restarts may notify a prompt again; receivers
// dedupe by `delivery` (the Run's uid and the prompt id).
import { createHmac, timingSafeEqual } from "node:crypto";
import type { PendingApprovalSchema, RunStatus } from "../../api/status.ts";
import type { z } from "zod";

/** A prompt as the Run reports it. */
type PendingApproval = z.infer<typeof PendingApprovalSchema>;

/** The header carrying the body's signature. */
export const SIGNATURE_HEADER = "x-leviath-signature-256";

/** The `type` of a pending prompt's notice. */
export const PENDING_NOTICE_TYPE = "approval.pending";

/** The Run a notice is about, as the reconciler sees it. */
export interface NoticeRun {
  readonly metadata: { readonly name?: string; readonly namespace?: string; readonly uid?: string };
  readonly status?: Pick<RunStatus, "pendingApprovals"> | undefined;
}

/** The JSON body of a pending prompt's notice. */
export interface PendingNotice {
  readonly type: typeof PENDING_NOTICE_TYPE;
  /** `<run uid>/<prompt id>`: the same on every delivery of this prompt's notice. */
  readonly delivery: string;
  readonly run: { readonly namespace: string; readonly name: string; readonly uid: string };
  readonly approval: PendingApproval;
  /** The command that answers it (`--once` allows it once; `--deny` refuses it). */
  readonly approve: string;
  /** RFC 3339: when this notice was built. */
  readonly sentAt: string;
}

/** The notice of one pending prompt of a Run. */
export function buildPendingNotice(run: { namespace: string; name: string; uid: string }, approval: PendingApproval, now: Date): PendingNotice {
  return {
    type: PENDING_NOTICE_TYPE, delivery: `${run.uid}/${approval.id}`, run, approval,
    approve: `kubectl leviath approve ${run.name} ${approval.id} -n ${run.namespace} --once`, sentAt: now.toISOString(),
  };
}

/** The signature header's value for a body: `sha256=` and the hex HMAC-SHA256 of its bytes under `key`. */
export function signBody(key: Uint8Array, body: string): string {
  return `sha256=${createHmac("sha256", key).update(body, "utf8").digest("hex")}`;
}

/** Whether `header` is the signature of `body` under `key` (what a receiver checks; constant time). */
export function verifySignature(key: Uint8Array, body: string, header: string | undefined): boolean {
  const want = Buffer.from(signBody(key, body));
  const got = Buffer.from(header ?? "");
  return got.length === want.length && timingSafeEqual(got, want);
}

/** Whether an HTTP status is worth another attempt (the receiver's trouble, or its asking to slow down). */
export function isRetryable(status: number): boolean {
  return status >= 500 || status === 429;
}

/** The delay before attempt `attempt` (2, 3, …): `baseMs` doubled each time, at most `maxMs`. */
export function computeBackoffMs(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** (attempt - 2));
}

/** How the notifier delivers. */
export interface ApprovalWebhookOptions {
  readonly url: string;
  /** The HMAC key (the Secret's bytes). */
  readonly key: Uint8Array;
  /** Attempts per notice, the first included (default 5). */
  readonly maxAttempts?: number;
  /** The first retry's delay (default 1 s), doubled per attempt up to `maxDelayMs` (default 60 s). */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /** One attempt's limit (default 10 s). */
  readonly timeoutMs?: number;
  /** Deliveries under way at once, at most (default 64). */
  readonly maxInFlight?: number;
  readonly now?: () => Date;
  /** Where a delivery that failed for good, or a notice dropped, is told. */
  readonly warn?: (message: string) => void;
}

/** How one delivery ended. */
export type DeliveryOutcome = { readonly ok: true; readonly attempts: number } | { readonly ok: false; readonly attempts: number; readonly why: string };

/** Prompts remembered as notified (the oldest forgotten first). */
const MAX_NOTIFIED = 16_384;

/** Sends the notices of pending prompts, each once. */
export class ApprovalNotifier {
  readonly #o: Required<Omit<ApprovalWebhookOptions, "warn">> & Pick<ApprovalWebhookOptions, "warn">;
  readonly #notified = new Set<string>();
  readonly #inFlight = new Set<Promise<DeliveryOutcome>>();

  /** A notifier posting to `options.url`. */
  constructor(options: ApprovalWebhookOptions) {
    this.#o = {
      maxAttempts: 5, baseDelayMs: 1000, maxDelayMs: 60_000, timeoutMs: 10_000, maxInFlight: 64, now: () => new Date(), ...options,
    };
  }

  /** Deliveries under way (for tests and shutdown). */
  settled(): Promise<DeliveryOutcome[]> {
    return Promise.all(this.#inFlight);
  }

  /** Notifies each prompt of the Run not notified yet (fire and forget: the reconciler never waits on it). */
  notePending(run: NoticeRun): void {
    const { name, namespace, uid } = run.metadata;
    if (name === undefined || namespace === undefined || uid === undefined) return;
    for (const approval of run.status?.pendingApprovals ?? []) {
      const key = `${uid}/${approval.id}`;
      if (this.#notified.has(key)) continue;
      if (this.#inFlight.size >= this.#o.maxInFlight) {
        this.#o.warn?.(`approval webhook: ${this.#inFlight.size} deliveries under way, the notice of prompt '${approval.id}' of Run ${namespace}/${name} is dropped`);
        continue;
      }
      this.#notified.add(key);
      if (this.#notified.size > MAX_NOTIFIED) this.#notified.delete(this.#notified.values().next().value!);
      const p = this.deliver(buildPendingNotice({ namespace, name, uid }, approval, this.#o.now()));
      this.#inFlight.add(p);
      void p.then((out) => {
        this.#inFlight.delete(p);
        if (!out.ok) this.#o.warn?.(`approval webhook: the notice of prompt '${approval.id}' of Run ${namespace}/${name} was not delivered after ${out.attempts} attempt(s): ${out.why}`);
      });
    }
  }

  /** POSTs one notice, signed, retrying what is worth it; never throws. */
  async deliver(notice: PendingNotice): Promise<DeliveryOutcome> {
    const body = JSON.stringify(notice);
    const headers = { "content-type": "application/json", [SIGNATURE_HEADER]: signBody(this.#o.key, body), "user-agent": "leviath-controller" };
    let why = "";
    for (let attempt = 1; attempt <= this.#o.maxAttempts; attempt++) {
      if (attempt > 1) await new Promise((r) => setTimeout(r, computeBackoffMs(attempt, this.#o.baseDelayMs, this.#o.maxDelayMs)));
      try {
        const res = await fetch(this.#o.url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(this.#o.timeoutMs) });
        await res.body?.cancel();
        if (res.status >= 200 && res.status < 300) return { ok: true, attempts: attempt };
        why = `HTTP ${res.status}`;
        if (!isRetryable(res.status)) return { ok: false, attempts: attempt, why };
      } catch (err) {
        why = err instanceof Error ? err.message : String(err);
      }
    }
    return { ok: false, attempts: this.#o.maxAttempts, why };
  }
}
