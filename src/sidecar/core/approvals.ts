// Prompts waiting for a person: a taint-gate prompt or a tool-approval prompt per pending call. Each one is
// settled exactly once, by an answer (the local endpoint standalone, an Approval resource in a cluster), by
// its expiry (`interaction_timeout_secs`; 0 waits forever), by its call's client giving up (withdrawn) or by the
// sidecar stopping. A withdrawn prompt is remembered, so a late answer is refused as withdrawn, not as unknown.
import type { ApprovalDecision } from "../../api/approval.ts";
import type { ApprovalKind } from "../../metrics/sidecar-metrics.ts";

/** A prompt as listed to people and reported in the Run's status. */
export interface PendingApproval {
  readonly id: string;
  readonly kind: ApprovalKind;
  readonly callId: string;
  readonly tool: string;
  /** What the call acts on (the command, the paths, the URL host), shown safely; absent when it names nothing. */
  readonly target?: string;
  readonly stage: string;
  readonly prompt: string;
  readonly options: readonly string[];
  /** ISO 8601. */
  readonly raisedAt: string;
  /** ISO 8601, or absent when it waits forever. */
  readonly expiresAt?: string;
}

/** How a prompt was settled. */
export type ApprovalSettlement =
  | { readonly kind: "answer"; readonly decision: ApprovalDecision; readonly reason?: string | undefined; readonly approvedBy?: string | undefined }
  | { readonly kind: "expired" }
  | { readonly kind: "withdrawn" }
  | { readonly kind: "cancelled" };

/** How many withdrawn prompt ids are remembered (the oldest forgotten first: a late answer then reads as unknown). */
const MAX_WITHDRAWN = 4096;

interface Entry {
  readonly approval: PendingApproval;
  readonly raisedMs: number;
  readonly settle: (s: ApprovalSettlement, waitedSeconds: number) => void;
  readonly timer: NodeJS.Timeout | undefined;
}

/** The pending prompts of one run. */
export class ApprovalBook {
  readonly #entries = new Map<string, Entry>();
  /** Pending prompts per kind, kept as entries come and go: a flood of prompts must not make each one cost more. */
  readonly #pending = new Map<ApprovalKind, number>();
  /** Withdrawn prompt ids, oldest first (a Set keeps insertion order). */
  readonly #withdrawn = new Set<string>();
  readonly #clock: () => number;
  readonly #onCount: (kind: ApprovalKind, count: number) => void;

  /** `clock` gives milliseconds since the epoch; `onCount` hears the number pending per kind after each change. */
  constructor(clock: () => number, onCount: (kind: ApprovalKind, count: number) => void) {
    this.#clock = clock;
    this.#onCount = onCount;
  }

  #count(kind: ApprovalKind, delta: 1 | -1): void {
    const n = (this.#pending.get(kind) ?? 0) + delta;
    this.#pending.set(kind, n);
    this.#onCount(kind, n);
  }

  /** Raises a prompt; `settle` is called once, with how long it waited. An id already pending is replaced. */
  raise(
    approval: Omit<PendingApproval, "raisedAt" | "expiresAt">,
    timeoutSeconds: number | undefined,
    settle: (s: ApprovalSettlement, waitedSeconds: number) => void,
  ): PendingApproval {
    this.#finish(approval.id, { kind: "cancelled" });
    const now = this.#clock();
    const full: PendingApproval = {
      ...approval,
      raisedAt: new Date(now).toISOString(),
      ...(timeoutSeconds === undefined ? {} : { expiresAt: new Date(now + timeoutSeconds * 1000).toISOString() }),
    };
    const timer = timeoutSeconds === undefined ? undefined : setTimeout(() => this.#finish(full.id, { kind: "expired" }), timeoutSeconds * 1000);
    timer?.unref();
    this.#entries.set(full.id, { approval: full, raisedMs: now, settle, timer });
    this.#count(full.kind, 1);
    return full;
  }

  #finish(id: string, s: ApprovalSettlement): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined) return false;
    this.#entries.delete(id);
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    this.#count(entry.approval.kind, -1);
    entry.settle(s, Math.max(0, (this.#clock() - entry.raisedMs) / 1000));
    return true;
  }

  /** Answers a pending prompt; false when no such prompt is pending. */
  answer(id: string, decision: ApprovalDecision, reason?: string, approvedBy?: string): boolean {
    return this.#finish(id, { kind: "answer", decision, reason, approvedBy });
  }

  /** Closes a pending prompt whose call's client gave up; false when no such prompt is pending. */
  withdraw(id: string): boolean {
    if (!this.#finish(id, { kind: "withdrawn" })) return false;
    this.#withdrawn.add(id);
    if (this.#withdrawn.size > MAX_WITHDRAWN) this.#withdrawn.delete(this.#withdrawn.values().next().value!);
    return true;
  }

  /** Whether this prompt was withdrawn (and not raised again since). */
  isWithdrawn(id: string): boolean {
    return this.#withdrawn.has(id) && !this.#entries.has(id);
  }

  /** One pending prompt. */
  get(id: string): PendingApproval | undefined {
    return this.#entries.get(id)?.approval;
  }

  /** Every pending prompt, oldest first. */
  list(): PendingApproval[] {
    return [...this.#entries.values()].sort((a, b) => a.raisedMs - b.raisedMs).map((e) => e.approval);
  }

  /** Settles every prompt as cancelled (the sidecar is stopping). */
  cancelAll(): void {
    for (const id of [...this.#entries.keys()]) this.#finish(id, { kind: "cancelled" });
  }
}
