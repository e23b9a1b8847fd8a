// The integrity of a context window (issue 40), beside its taint (context-taint.ts) and kept the same way: one label
// per live entry keyed by its identity, the context's integrity the lowest over live entries, recovering as entries
// leave; a model-authored entry takes the context's integrity (it may repeat any of it). It also keeps the text of
// live entries, bounded, for argument provenance: whether a value a call names occurs in an untrusted entry and in no
// trusted one. What cannot be seen fails closed: an untrusted entry whose text is not kept (over the bound, reported
// without it, or restored after a restart) makes every value not found in trusted text count as untrusted.
import type { IntegrityLevel } from "../api/integrity-policy.ts";

/** Where a value of a call's arguments occurs: in trusted text, only in untrusted text, or nowhere we can see. */
export type Provenance = "trusted" | "untrusted" | "none";

/** An untrusted entry, as persisted and restored (trusted is every entry's default). */
export interface UntrustedEntry {
  readonly region: string;
  readonly entryId: string;
  /** The tool whose result it is, when known: the audit names it. */
  readonly tool?: string | undefined;
}

/** The bounds of the provenance index. */
export interface ProvenanceLimits {
  /** Characters of text kept over all live entries. */
  readonly maxChars: number;
  /** Shorter values are not attributed (`none`). */
  readonly minValueLength: number;
}

interface Held {
  readonly region: string;
  readonly entryId: string;
  integrity: IntegrityLevel;
  tool: string | undefined;
  /** Lower-cased text, when kept. */
  text: string | undefined;
}

/** How a value is found: lower-cased, as the kept text is (a case change is no disguise). */
function normalise(text: string): string {
  return text.toLowerCase();
}

const key = (region: string, id: string): string => `${region}\u0000${id}`;

/** The integrity labels and provenance text of one agent's context window; a small mutable store with no I/O. */
export class ContextIntegrity {
  readonly #entries = new Map<string, Held>();
  /** Live untrusted entries, oldest first: the first is the one that made the context untrusted. */
  readonly #untrusted = new Set<string>();
  #blind = 0;
  #chars = 0;
  #limits: ProvenanceLimits;

  /** A store with its bounds, optionally restored (restored entries have no text: they count as unseen). */
  constructor(limits: ProvenanceLimits, restored: Iterable<UntrustedEntry> = []) {
    this.#limits = limits;
    for (const r of restored) this.label(r.region, r.entryId, "untrusted", { tool: r.tool });
  }

  /** New bounds (a policy reload); text already kept stays. */
  setLimits(limits: ProvenanceLimits): void {
    this.#limits = limits;
  }

  #drop(held: Held): void {
    if (held.text !== undefined) this.#chars -= held.text.length;
    else if (held.integrity === "untrusted") this.#blind -= 1;
  }

  #keep(k: string, held: Held): void {
    if (held.text !== undefined) this.#chars += held.text.length;
    else if (held.integrity === "untrusted") this.#blind += 1;
    if (held.integrity === "untrusted") this.#untrusted.add(k);
  }

  /**
   * Labels an entry. An entry already untrusted stays untrusted (a label rises only by an eviction), and text given
   * again is added to what is kept. Returns the entry's label.
   */
  label(region: string, entryId: string, integrity: IntegrityLevel, opts: { readonly tool?: string | undefined; readonly text?: string | undefined } = {}): IntegrityLevel {
    const k = key(region, entryId);
    const previous = this.#entries.get(k);
    const held: Held = previous ?? { region, entryId, integrity, tool: opts.tool, text: undefined };
    if (previous !== undefined) this.#drop(previous);
    const text = this.#nextText(previous, opts.text);
    if (integrity === "untrusted" && held.integrity === "trusted") {
      held.integrity = "untrusted";
      held.tool = opts.tool;
    }
    held.text = text;
    this.#entries.set(k, held);
    this.#keep(k, held);
    return held.integrity;
  }

  /** The text kept after a label: added to what is kept; never for an untrusted entry already unseen; none past the bound. */
  #nextText(previous: Held | undefined, given: string | undefined): string | undefined {
    // Past the bound before any work: a large result is not even lower-cased.
    const room = this.#limits.maxChars - this.#chars - (previous?.text === undefined ? 0 : previous.text.length + 1);
    const added = given === undefined || given.length > room ? undefined : normalise(given);
    if (given !== undefined && added === undefined) return undefined;
    let text: string | undefined;
    if (previous === undefined) text = added;
    else if (previous.text === undefined) text = previous.integrity === "untrusted" ? undefined : added;
    else text = added === undefined ? previous.text : `${previous.text}\n${added}`;
    // Past the bound the entry's text is not kept at all (a part of it would hide the rest).
    return text !== undefined && this.#chars + text.length <= this.#limits.maxChars ? text : undefined;
  }

  /** Labels an entry the model wrote at the context's integrity: the model had all of it in view. */
  labelModelWrite(region: string, entryId: string, text?: string): IntegrityLevel {
    return this.label(region, entryId, this.integrity(), { text, tool: this.cause()?.tool });
  }

  /** Removes an entry's label and text; false when it had none. */
  evict(region: string, entryId: string): boolean {
    const k = key(region, entryId);
    const held = this.#entries.get(k);
    if (held === undefined) return false;
    this.#drop(held);
    this.#entries.delete(k);
    this.#untrusted.delete(k);
    return true;
  }

  /** Removes every entry of a region. */
  clearRegion(region: string): void {
    for (const held of [...this.#entries.values()]) if (held.region === region) this.evict(held.region, held.entryId);
  }

  /** The context's integrity: untrusted while any live entry is. */
  integrity(): IntegrityLevel {
    return this.#untrusted.size > 0 ? "untrusted" : "trusted";
  }

  /** The oldest live untrusted entry: the one that made the context untrusted. */
  cause(): UntrustedEntry | undefined {
    for (const k of this.#untrusted) {
      const held = this.#entries.get(k)!;
      return { region: held.region, entryId: held.entryId, tool: held.tool };
    }
    return undefined;
  }

  /** The first live untrusted entry whose text holds the value, if any (for the audit). */
  findUntrustedSource(value: string): UntrustedEntry | undefined {
    const v = normalise(value);
    for (const k of this.#untrusted) {
      const held = this.#entries.get(k)!;
      if (held.text === undefined || held.text.includes(v)) return { region: held.region, entryId: held.entryId, tool: held.tool };
    }
    return undefined;
  }

  /**
   * Where a value occurs: `trusted` when some trusted entry's text holds it; else `untrusted` when some untrusted
   * entry's holds it, or when an untrusted entry's text is not kept (it could be there); else `none`. A value shorter
   * than the bound's `minValueLength` is `none`.
   */
  provenanceOf(value: string): Provenance {
    if (value.length < this.#limits.minValueLength) return "none";
    const v = normalise(value);
    let untrusted = false;
    for (const held of this.#entries.values()) {
      if (held.text === undefined || !held.text.includes(v)) continue;
      if (held.integrity === "trusted") return "trusted";
      untrusted = true;
    }
    return untrusted || this.#blind > 0 ? "untrusted" : "none";
  }

  /** Characters of text kept now (bounded by `maxChars`). */
  get keptChars(): number {
    return this.#chars;
  }

  /** Every live untrusted entry, for persistence (restore with the constructor). */
  entries(): UntrustedEntry[] {
    return [...this.#untrusted].map((k) => {
      const held = this.#entries.get(k)!;
      return { region: held.region, entryId: held.entryId, ...(held.tool === undefined ? {} : { tool: held.tool }) };
    });
  }
}
