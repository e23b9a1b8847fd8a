// A policy rollout in the sidecar (docs/operations.md, "Rolling out a policy"): the generation in force when it is
// later than the Run's pinned one, and a warn or audit candidate, each compiled from the snapshot the controller
// resolved for this Run. Each call is decided under them too: the stricter of the pinned and the in-force verdict is
// enforced, and a candidate whose outcome differs is a would-flip, handed to `flipped` (never enforced). A snapshot
// that does not parse or compile changes nothing: the last good one stays, and the failure is reported.
import type { RunPolicy } from "../../api/run-policy.ts";
import { decideWouldFlip, formatWouldFlip, pickStricter, type PolicyVerdict, type WouldFlip } from "../../policy/policy-flips.ts";
import { parseResumedRunPolicy } from "../../sandbox/resume-snapshot.ts";
import type { RolloutRole } from "../../sandbox/rollout-snapshot.ts";
import type { Enforcement } from "./enforcement.ts";

/** A rollout snapshot in force in the sidecar. */
export interface RolloutEntry {
  readonly enf: Enforcement;
  readonly generation: number;
  readonly sha256: string;
  /** The candidate's mode (the in-force one has none). */
  readonly enforcement?: "warn" | "audit" | undefined;
}

/** A rollout snapshot as fetched, its bytes checked against the digest the Run's status records. */
export interface RolloutOffer {
  readonly generation: number;
  readonly sha256: string;
  readonly text: string;
  readonly enforcement?: "warn" | "audit" | undefined;
}

/** What a rollout reports. */
export interface RolloutHooks {
  /** A snapshot went into force (`entry`) or was withdrawn (undefined). */
  changed(role: RolloutRole, entry: RolloutEntry | undefined): void;
  /** A snapshot that did not parse or compile; the one before stays. */
  failed(role: RolloutRole, error: string): void;
  /** A call the candidate would decide otherwise. */
  flipped(flip: WouldFlip, candidate: RolloutEntry, callId: string): void;
}

/** What one call is decided under: a policy, giving its verdict. */
export type DecideUnder = (enf: Enforcement) => PolicyVerdict;

/** The verdict to follow and the policy it came from. */
export interface RolloutVerdict {
  readonly verdict: PolicyVerdict;
  readonly enf: Enforcement;
}

/** The would-flips of a warn candidate so far, as the Run's status reports them (`status.policyFlips`). */
export interface FlipTally {
  readonly generation: number;
  readonly count: number;
  readonly last?: string | undefined;
}

/** The rollout snapshots of one Run, and the dual decision over them. */
export class PolicyRollout {
  readonly #compile: (runPolicy: RunPolicy) => { ok: true; value: Enforcement } | { ok: false; error: string };
  readonly #hooks: RolloutHooks;
  readonly #entries = new Map<RolloutRole, RolloutEntry>();
  /** Calls already compared with the candidate (a call decided again after its prompt is not a second flip). */
  readonly #compared = new WeakSet<object>();
  #tally: FlipTally | undefined;

  /** A rollout compiling snapshots with `compile` (the holder's context). */
  constructor(compile: (runPolicy: RunPolicy) => { ok: true; value: Enforcement } | { ok: false; error: string }, hooks: RolloutHooks) {
    this.#compile = compile;
    this.#hooks = hooks;
  }

  /** The snapshot of `role` in force, if any. */
  entry(role: RolloutRole): RolloutEntry | undefined {
    return this.#entries.get(role);
  }

  /** The would-flips of the warn candidate (undefined: no flip under a warn candidate yet). */
  tally(): FlipTally | undefined {
    return this.#tally;
  }

  /** Puts an offered snapshot into force once it parses and compiles; the same bytes again change nothing. */
  offer(role: RolloutRole, offer: RolloutOffer): "unchanged" | "applied" | "failed" {
    const before = this.#entries.get(role);
    if (before?.sha256 === offer.sha256 && before.enforcement === offer.enforcement) return "unchanged";
    // The generation in force only ever moves on: an older one offered (a stale or forged status) is not taken.
    if (role === "enforced" && before !== undefined && offer.generation <= before.generation) return "unchanged";
    const parsed = parseResumedRunPolicy(offer.text);
    const built = parsed.ok ? this.#compile(parsed.value) : { ok: false as const, error: parsed.message };
    if (!built.ok) {
      this.#hooks.failed(role, built.error);
      return "failed";
    }
    const entry: RolloutEntry = { enf: built.value, generation: offer.generation, sha256: offer.sha256, ...(offer.enforcement ? { enforcement: offer.enforcement } : {}) };
    this.#entries.set(role, entry);
    this.#hooks.changed(role, entry);
    return "applied";
  }

  /** Withdraws the candidate (the Run's status no longer names one); the generation in force is never withdrawn. */
  withdrawCandidate(): void {
    if (!this.#entries.delete("candidate")) return;
    this.#hooks.changed("candidate", undefined);
  }

  /**
   * The verdict a call follows: the pinned one, or the in-force generation's when stricter; and, the first time the
   * call (the object, kept weakly) is decided, its would-flip under the candidate against that verdict.
   */
  decide(call: { readonly id: string; readonly tool: string; readonly target?: string | undefined }, pinned: RolloutVerdict, under: DecideUnder): RolloutVerdict {
    const enforced = this.#entries.get("enforced");
    const inForce = enforced === undefined ? pinned : (() => {
      const picked = pickStricter(pinned.verdict, under(enforced.enf));
      return picked.from === "pinned" ? pinned : { verdict: picked.verdict, enf: enforced.enf };
    })();
    const candidate = this.#entries.get("candidate");
    if (candidate !== undefined && !this.#compared.has(call)) {
      this.#compared.add(call);
      // What the Run would get once the candidate is enforced: the stricter of its pinned verdict and the candidate's.
      const would = pickStricter(pinned.verdict, under(candidate.enf)).verdict;
      const flip = decideWouldFlip(call, inForce.verdict, would);
      if (flip !== undefined) this.#flipped(flip, candidate, call.id);
    }
    return inForce;
  }

  #flipped(flip: WouldFlip, candidate: RolloutEntry, callId: string): void {
    if (candidate.enforcement === "warn") {
      const count = this.#tally?.generation === candidate.generation ? this.#tally.count : 0;
      this.#tally = { generation: candidate.generation, count: count + 1, last: formatWouldFlip(flip) };
    }
    this.#hooks.flipped(flip, candidate, callId);
  }
}
