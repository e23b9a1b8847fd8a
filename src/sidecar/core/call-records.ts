// The calls of one run the service remembers: every pending call (never forgotten) and the settled ones, for
// retries and waits, within a count and a size budget (the oldest submitted settled call is forgotten first).
import type { EntryRef } from "../../api/sidecar-contract.ts";
import type { IntegrityOutcome } from "../../policy/integrity-gate.ts";
import type { RunSource } from "../../policy/decide-tool-call.ts";
import type { CallOutcome } from "./call-outcomes.ts";
import type { CallSpanState } from "./call-span-state.ts";
import { OldestFirst } from "./oldest-first.ts";

/** One call and where its decision stands. */
export interface CallRecord {
  readonly id: string;
  /** Who answered its prompt and why (an Approval's spec.approvedBy and reason), for the decision's audit record. */
  answeredBy?: { readonly approvedBy?: string | undefined; readonly reason?: string | undefined };
  /** Order of submission: the oldest settled calls are forgotten first. */
  readonly seq: number;
  readonly tool: string;
  /** A digest of the tool and arguments: a retry must match it; the arguments themselves are dropped once settled. */
  readonly fingerprint: string;
  /** The length of the tool and arguments as JSON: what the call counts against the budgets. */
  readonly size: number;
  args: Record<string, unknown>;
  /** The call's target (policy/targets.ts), taken from its arguments once: the gate and the answer both need it. */
  readonly target: string | undefined;
  readonly entry: EntryRef;
  permissionApproved: boolean;
  permissionDone: boolean;
  gateDone: boolean;
  /** How the gate let it through, once it did (the source of its allow). */
  gateSource: RunSource;
  /** Its prompt is an integrity hold's (its allow settles the hold once). */
  integrityAsked?: boolean;
  /** Its integrity hold was answered allow. */
  integrityDone?: boolean;
  /** What the integrity step found, for the audit (issue 40). */
  integrity?: IntegrityOutcome | undefined;
  started: number;
  response: CallOutcome | undefined;
  /** The first answer, while it is being worked out (dropped once there is one). */
  first: Promise<CallOutcome> | undefined;
  done: boolean;
  /** Made by the first wait: most calls are never waited on, and thousands are remembered. */
  waiters: Set<() => void> | undefined;
  /** The size it counts against the remembered budget once settled: its arguments and its result. */
  chars: number;
  /** The client's deadline for the first answer; cleared once it has one (a prompt). */
  deadline: number | undefined;
  /** Whether its caller can execute a tool handed back `run` (MCP cannot). */
  readonly callerRuns: boolean;
  /** Fires when the last deadline its client gave for waiting passes (the call is then withdrawn). */
  giveUpTimer?: NodeJS.Timeout | undefined;
  /** Set once its client gave up: the call never runs from then on (its prompt, if any, is withdrawn). */
  gaveUp?: GiveUp;
  /** What its span gathers while it is decided (only while tracing is on: core/call-spans.ts). */
  span?: CallSpanState | undefined;
}

/** Why a call's client gave up, as its audit record says it. */
export type GiveUpReason =
  /** An MCP request cancelled (`notifications/cancelled`, the client's request timeout) or its session or connection closed. */
  | "cancelled"
  /** A `/v1` wait on the call closed its connection before its answer. */
  | "connection_closed"
  /** The last `leviath-deadline` its `/v1` client gave passed while the call was still unsettled. */
  | "deadline";

/** Why a call's client gave up, and the prompt it withdrew (if one was pending). */
export interface GiveUp {
  readonly reason: GiveUpReason;
  readonly approvalId?: string | undefined;
}

/** Whether the call's client gave up: it withdrew the call, or its deadline for the first answer passed (the sidecar was stopped or slow). */
export function hasGivenUp(rec: CallRecord, now: number): boolean {
  return rec.gaveUp !== undefined || (rec.deadline !== undefined && now > rec.deadline);
}

/** The default number of settled calls remembered. */
export const DEFAULT_MAX_RECORDS = 10_000;
/**
 * The default budget of the settled calls remembered: 16 Mi code units (a 256 Mi pod holds the process itself,
 * about 180 MiB resident, and a call's transient copies besides). A `read_file` answer carries the file (up
 * to the size cap) and a `write_file` call its content, so a count alone would let 10,000 records hold gigabytes.
 */
export const DEFAULT_MAX_RECORD_CHARS = 16 * 1024 * 1024;
/** The default number of calls pending at once: far more than a runtime has in flight or waiting on a person. */
export const DEFAULT_MAX_PENDING_CALLS = 256;
/** The default budget of the pending calls' arguments: 16 Mi code units (one request body's worth, at most). */
export const DEFAULT_MAX_PENDING_CHARS = 16 * 1024 * 1024;

/** What a settled call's record counts besides its result (its digest and fields), in code units. */
const SETTLED_RECORD_CHARS = 256;
const SETTLED_ARGS: Record<string, unknown> = Object.freeze({});

function resultChars(response: CallOutcome): number {
  return response.kind === "allow" ? response.body.result.length : 0;
}

/** The budgets of the remembered calls (defaults above). */
export interface CallRecordLimits {
  /** Settled calls remembered for retries and waits (oldest forgotten first). */
  readonly maxRecords?: number | undefined;
  /** What the settled calls remembered may hold, arguments and results together, in UTF-16 code units (about bytes). */
  readonly maxRecordChars?: number | undefined;
  /** How many calls may be pending (being decided, executed or waiting on a prompt) at once. */
  readonly maxPendingCalls?: number | undefined;
  /** What the pending calls may hold together (their arguments), in UTF-16 code units. */
  readonly maxPendingChars?: number | undefined;
}

/** The remembered calls and their budgets. */
export class CallRecords {
  readonly #limits: CallRecordLimits;
  readonly #calls = new Map<string, CallRecord>();
  /** The settled calls, apart from the pending ones (which are never forgotten), oldest submitted first. */
  readonly #finished = new OldestFirst<CallRecord>();
  #seq = 0;
  /** The size of the settled calls remembered (`CallRecord.chars` summed). */
  #settledChars = 0;
  /** Calls not settled yet, and their fingerprints' size: bounded apart from the settled ones, never forgotten. */
  #pendingCount = 0;
  #pendingChars = 0;

  /** Records within these budgets. */
  constructor(limits: CallRecordLimits) {
    this.#limits = limits;
  }

  /** How many calls may be pending at once. */
  get maxPendingCalls(): number {
    return this.#limits.maxPendingCalls ?? DEFAULT_MAX_PENDING_CALLS;
  }

  /** The call with this id, if remembered. */
  get(id: string): CallRecord | undefined {
    return this.#calls.get(id);
  }

  /** The next submission's sequence number. */
  nextSeq(): number {
    return this.#seq++;
  }

  /** Whether one more pending call of this size would pass the pending budget. */
  pendingFull(chars: number): boolean {
    const maxChars = this.#limits.maxPendingChars ?? DEFAULT_MAX_PENDING_CHARS;
    return this.#pendingCount >= this.maxPendingCalls || this.#pendingChars + chars > maxChars;
  }

  /** Forgets the oldest settled calls until one more fits. */
  forgetOld(): void {
    const max = this.#limits.maxRecords ?? DEFAULT_MAX_RECORDS;
    const maxChars = this.#limits.maxRecordChars ?? DEFAULT_MAX_RECORD_CHARS;
    while (this.#calls.size >= max || this.#settledChars > maxChars) {
      const rec = this.#finished.take();
      if (rec === undefined) return;
      // An entry can be stale: its call already forgotten, or pending again after it settled.
      if (rec.done && this.#calls.get(rec.id) === rec) {
        this.#calls.delete(rec.id);
        this.#settledChars -= rec.chars;
        rec.chars = 0;
      }
    }
  }

  /** Remembers a new, pending call. */
  add(rec: CallRecord): void {
    this.#calls.set(rec.id, rec);
    this.#pendingCount++;
    this.#pendingChars += rec.size;
  }

  /** Sets a call's answer, moves it between pending and settled, and wakes its waiters. */
  finish(rec: CallRecord, response: CallOutcome): CallOutcome {
    const wasDone = rec.done;
    rec.response = response;
    rec.done = response.kind !== "ask";
    rec.first = undefined;
    // Only a remembered, settled call counts against the budget; one pending again stops counting until it settles.
    const chars = rec.done && this.#calls.get(rec.id) === rec ? SETTLED_RECORD_CHARS + resultChars(response) : 0;
    this.#settledChars += chars - rec.chars;
    rec.chars = chars;
    if (rec.done && !wasDone) this.#finished.add(rec);
    if (rec.done !== wasDone) {
      const sign = rec.done ? -1 : 1;
      this.#pendingCount += sign;
      this.#pendingChars += sign * rec.size;
    }
    // A settled call needs its arguments no more (its record keeps the digest for retries): do not hold them.
    if (rec.done) rec.args = SETTLED_ARGS;
    // Nobody waits for a settled call's deadline any more.
    if (rec.done && rec.giveUpTimer !== undefined) {
      clearTimeout(rec.giveUpTimer);
      rec.giveUpTimer = undefined;
    }
    if (rec.waiters !== undefined) for (const wake of [...rec.waiters]) wake();
    return response;
  }

  /** The call's answer once it changes (a prompt answered, a new prompt raised) or after `ms`. */
  wait(id: string, ms: number): Promise<CallOutcome | undefined> {
    const rec = this.#calls.get(id);
    if (rec === undefined || rec.done || ms <= 0) return Promise.resolve(rec?.response);
    const before = rec.response;
    return new Promise((resolve) => {
      const wake = () => {
        if (rec.response === before && !rec.done) return;
        clearTimeout(timer);
        rec.waiters?.delete(wake);
        resolve(rec.response);
      };
      const timer = setTimeout(() => {
        rec.waiters?.delete(wake);
        resolve(rec.response);
      }, ms);
      (rec.waiters ??= new Set()).add(wake);
    });
  }
}
