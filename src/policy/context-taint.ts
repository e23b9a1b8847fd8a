// Context taint (taint-gate spec §1.3-1.5, DESIGN.md §5). One label per live context entry, keyed by
// the entry's identity (region + entry id) rather than by position, so an eviction removes exactly the
// label of the entry that left (upstream's index drift, H1, cannot happen). Model-authored writes are
// labelled at the current context taint, so copying private text and deleting the original cannot
// launder it (H2). The context taint is the max over live labelled entries, public when there are none.
import { LEVELS, isLevelAtMost, levelRank, maxLevel } from "./levels.ts";
import type { Level } from "./levels.ts";

/** One labelled entry, as persisted and restored. */
export interface LabelledEntry {
  readonly region: string;
  readonly entryId: string;
  readonly level: Level;
  /** Its integrity label is untrusted (policy/context-integrity.ts; absent: trusted), as persisted beside the level. */
  readonly untrusted?: true;
  /** With `untrusted`: the tool whose result it is. */
  readonly tool?: string;
}

interface RegionLabels {
  readonly labels: Map<string, Level>;
  /** Live entries per level rank, so a region's level is O(1) after any change. */
  readonly counts: [number, number, number];
}

function regionLevelOf(region: RegionLabels): Level {
  for (let rank = 2; rank > 0; rank--) if (region.counts[rank]! > 0) return LEVELS[rank]!;
  return "public";
}

/** The labels of one agent's context window; a small mutable store with no I/O. */
export class ContextTaint {
  readonly #regions = new Map<string, RegionLabels>();

  /** Builds a store, optionally restored from persisted entries. */
  constructor(entries: Iterable<LabelledEntry> = []) {
    for (const e of entries) this.label(e.region, e.entryId, e.level);
  }

  /**
   * Labels an entry written by the runtime, e.g. a tool result with its tool's label. An entry that already has
   * a label keeps the higher of the two: a label goes down only by an eviction of that entry, so re-registering
   * an id, reporting a result under it or storing a new call there can never launder what it held. Returns the
   * label the entry now has.
   */
  label(region: string, entryId: string, level: Level): Level {
    let labels = this.#regions.get(region);
    if (labels === undefined) {
      labels = { labels: new Map(), counts: [0, 0, 0] };
      this.#regions.set(region, labels);
    }
    const previous = labels.labels.get(entryId);
    const kept = previous === undefined ? level : maxLevel(previous, level);
    if (previous !== undefined) labels.counts[levelRank(previous)]! -= 1;
    labels.labels.set(entryId, kept);
    labels.counts[levelRank(kept)]! += 1;
    return kept;
  }

  /**
   * Labels an entry the model wrote (assistant turn, context write, checklist entry, submitted answer)
   * at the current context taint: the model had all of that in view, so its text may carry any of it.
   */
  labelModelWrite(region: string, entryId: string): Level {
    return this.label(region, entryId, this.level());
  }

  /** Removes an entry's label (eviction, deletion, compaction); false when it had none. */
  evict(region: string, entryId: string): boolean {
    const labels = this.#regions.get(region);
    const level = labels?.labels.get(entryId);
    if (labels === undefined || level === undefined) return false;
    labels.labels.delete(entryId);
    labels.counts[levelRank(level)]! -= 1;
    if (labels.labels.size === 0) this.#regions.delete(region);
    return true;
  }

  /** Removes every label of a region (the region was cleared). */
  clearRegion(region: string): void {
    this.#regions.delete(region);
  }

  /** The label of one entry, if it has one. */
  labelOf(region: string, entryId: string): Level | undefined {
    return this.#regions.get(region)?.labels.get(entryId);
  }

  /** A region's level: the max over its live entries, public when empty. */
  regionLevel(region: string): Level {
    const labels = this.#regions.get(region);
    return labels === undefined ? "public" : regionLevelOf(labels);
  }

  /** The context taint: the max over every live labelled entry, public when there are none. */
  level(): Level {
    let best: Level = "public";
    for (const labels of this.#regions.values()) {
      const level = regionLevelOf(labels);
      if (levelRank(level) > levelRank(best)) best = level;
      if (best === "private") break;
    }
    return best;
  }

  /**
   * Regions whose level is strictly above `clearance`, for the block message. In `windowOrder` when
   * given (regions it does not name follow, in first-labelled order), else in first-labelled order.
   */
  sourceRegions(clearance: Level, windowOrder: readonly string[] = []): string[] {
    const ordered = [...new Set(windowOrder)].filter((r) => this.#regions.has(r));
    for (const region of this.#regions.keys()) if (!ordered.includes(region)) ordered.push(region);
    return ordered.filter((region) => !isLevelAtMost(this.regionLevel(region), clearance));
  }

  /** Every live label, for persistence (restore with the constructor). */
  entries(): LabelledEntry[] {
    const out: LabelledEntry[] = [];
    for (const [region, labels] of this.#regions) {
      for (const [entryId, level] of labels.labels) out.push({ region, entryId, level });
    }
    return out;
  }
}
