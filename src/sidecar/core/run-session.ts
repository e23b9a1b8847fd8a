// The mutable state of one run the sidecar decides for: the context labels (keyed by entry identity), the
// session clearance raises, approval grants and the current stage. Every change that must survive a
// restart goes to the state journal first.
import { ContextTaint } from "../../policy/context-taint.ts";
import { ContextIntegrity, type ProvenanceLimits } from "../../policy/context-integrity.ts";
import type { IntegrityLevel } from "../../api/integrity-policy.ts";
import type { Level } from "../../policy/levels.ts";
import type { RestoredState, StateJournal, StateOp } from "../storage/state-journal.ts";

/** The provenance bounds before a policy says otherwise (the schema's defaults). */
export const DEFAULT_PROVENANCE_LIMITS: ProvenanceLimits = { maxChars: 1_048_576, minValueLength: 4 };

/** An entry's integrity as the sidecar assigns it, with the tool it came from and its text for provenance. */
export interface IntegrityLabel {
  readonly integrity: IntegrityLevel;
  readonly tool?: string | undefined;
  readonly text?: string | undefined;
}

/** One run's state. */
export class RunSession {
  readonly context: ContextTaint;
  /** The entries' integrity labels and provenance text (issue 40). */
  readonly integrity: ContextIntegrity;
  readonly #raises: Set<string>;
  readonly #runGrants: Set<string>;
  readonly #stageGrants = new Set<string>();
  readonly #journal: StateJournal | null;
  readonly #onJournalError: (op: StateOp) => void;
  #stageIndex: number;

  /** A session restored from a journal (or fresh), starting at `entryStage` unless the journal says otherwise. */
  constructor(opts: { restored?: RestoredState | undefined; journal: StateJournal | null; entryStage: number; onJournalError: (op: StateOp) => void; provenance?: ProvenanceLimits }) {
    this.context = new ContextTaint(opts.restored?.entries ?? []);
    const untrusted = (opts.restored?.entries ?? []).filter((e) => e.untrusted === true);
    this.integrity = new ContextIntegrity(opts.provenance ?? DEFAULT_PROVENANCE_LIMITS, untrusted);
    this.#raises = new Set(opts.restored?.raises ?? []);
    this.#runGrants = new Set((opts.restored?.grants ?? []).map((g) => g.key));
    this.#stageIndex = opts.restored?.stageIndex ?? opts.entryStage;
    this.#journal = opts.journal;
    this.#onJournalError = opts.onJournalError;
  }

  #record(op: StateOp): void {
    if (this.#journal !== null && !this.#journal.record(op)) this.#onJournalError(op);
  }

  /** The current stage's index. */
  get stageIndex(): number {
    return this.#stageIndex;
  }

  /** Moves to a stage; stage-scoped grants end when the index changes. Returns whether it changed. */
  setStage(index: number): boolean {
    if (index === this.#stageIndex) return false;
    this.#stageIndex = index;
    this.#stageGrants.clear();
    this.#record({ op: "stage", index });
    return true;
  }

  /** Tools whose clearance "Allow for this session" raised to private. */
  get raises(): ReadonlySet<string> {
    return this.#raises;
  }

  /** Raises a tool's clearance for the rest of the run. */
  addRaise(tool: string): void {
    if (this.#raises.has(tool)) return;
    this.#raises.add(tool);
    this.#record({ op: "raise", tool });
  }

  /** Whether an earlier "allow for this stage/run" answer covers this permission key. */
  hasGrant(key: string): boolean {
    return this.#runGrants.has(key) || this.#stageGrants.has(key);
  }

  /**
   * Remembers an approval for the stage or for the run. A run grant survives a restart only with the audited
   * decision record of call `callId` (written before this, see state-journal.ts).
   */
  grant(key: string, scope: "stage" | "run", callId: string): void {
    if (scope === "stage") {
      this.#stageGrants.add(key);
      return;
    }
    if (this.#runGrants.has(key)) return;
    this.#runGrants.add(key);
    this.#record({ op: "grant", key, call: callId });
  }

  /**
   * Labels an entry the sidecar assigns a level to (a tool result, an input), and its integrity (trusted when not
   * given); an existing higher label and an untrusted one stay.
   */
  label(region: string, id: string, level: Level, integrity: IntegrityLabel = { integrity: "trusted" }): Level {
    const kept = this.context.label(region, id, level);
    const integrityKept = this.integrity.label(region, id, integrity.integrity, integrity);
    this.#recordLabel({ region, id, level: kept }, integrityKept, integrity.tool);
    return kept;
  }

  /** Labels a model-authored entry at the current context taint and integrity. */
  labelModelWrite(region: string, id: string, text?: string): Level {
    const level = this.context.labelModelWrite(region, id);
    this.#recordLabel({ region, id, level }, this.integrity.labelModelWrite(region, id, text), this.integrity.cause()?.tool);
    return level;
  }

  #recordLabel(entry: { region: string; id: string; level: Level }, integrity: IntegrityLevel, tool: string | undefined): void {
    this.#record({ op: "label", ...entry, ...(integrity === "untrusted" ? { untrusted: true, ...(tool === undefined ? {} : { tool }) } : {}) });
  }

  /** Removes an entry's label; false when it had none. */
  evict(region: string, id: string): boolean {
    const hadIntegrity = this.integrity.evict(region, id);
    const had = this.context.evict(region, id) || hadIntegrity;
    if (had) this.#record({ op: "evict", region, id });
    return had;
  }

  /** Removes every label of a region; returns how many entries it had. */
  clearRegion(region: string): number {
    const count = this.context.entries().filter((e) => e.region === region).length;
    this.context.clearRegion(region);
    this.integrity.clearRegion(region);
    if (count > 0) this.#record({ op: "clear", region });
    return count;
  }
}
