// The audit that outlives the pod: audit lines packed into the Run's audit ConfigMaps (`<run>-audit-000`, ...),
// each at most AUDIT_CHUNK_BYTES, at most MAX_AUDIT_CHUNKS of them. Lines are accepted synchronously (the call
// waits for nothing but memory) and written in the background and on stop; a full chunk is written once more
// and then forgotten, so memory holds at most the chunks not yet written. Beyond the bound, lines are refused,
// and with them the calls (fail closed: an unrecorded call never runs). A restarted sidecar continues after the
// last chunk an earlier start recorded in the Run's `status.audit` (`resume`): the chunks before it are never
// written again, it is extended with the text the record vouches for, or left alone when it no longer holds it.
import { AUDIT_CHUNK_BYTES, MAX_AUDIT_CHUNKS } from "../../sandbox/names.ts";

/** The ConfigMap key holding a chunk's lines. */
export const AUDIT_CHUNK_KEY = "audit.jsonl";

/** Writes one chunk's whole text (create or replace). */
export type ChunkWriter = (index: number, text: string) => Promise<void>;

/** Packs audit lines into bounded chunks and writes the changed ones. */
export class AuditChunks {
  readonly #write: ChunkWriter;
  readonly #chunkBytes: number;
  readonly #maxChunks: number;
  /** Text of the chunks not yet written in their final form, by index. */
  readonly #open = new Map<number, string>();
  readonly #dirty = new Set<number>();
  #current = 0;
  #currentBytes = 0;
  #flushing: Promise<void> | undefined;

  /** Chunks written by `write`, bounded as given (defaults: the Run's audit ConfigMaps). */
  constructor(write: ChunkWriter, chunkBytes = AUDIT_CHUNK_BYTES, maxChunks = MAX_AUDIT_CHUNKS) {
    this.#write = write;
    this.#chunkBytes = chunkBytes;
    this.#maxChunks = maxChunks;
  }

  /**
   * Continues the sequence an earlier start stored: chunk `index` (the last one there) holds `text`. Called before
   * the first line; a chunk already full (or fuller than a chunk may be), or one whose text is not the sidecar's
   * (`undefined`), is left as it is and the next line opens the one after it, within the bound.
   */
  resume(index: number, text: string | undefined): void {
    if (this.#open.size > 0 || this.#current > 0) throw new Error("AuditChunks.resume after lines were accepted");
    const bytes = text === undefined ? this.#chunkBytes : Buffer.byteLength(text, "utf8");
    this.#current = index;
    this.#currentBytes = Math.min(bytes, this.#chunkBytes);
    if (text !== undefined && bytes < this.#chunkBytes) this.#open.set(index, text);
  }

  /** Takes one line; false when the audit is at its bound (or the line alone exceeds a chunk). */
  accept(line: string): boolean {
    const bytes = Buffer.byteLength(line, "utf8");
    if (bytes > this.#chunkBytes) return false;
    if (this.#currentBytes + bytes > this.#chunkBytes) {
      if (this.#current + 1 >= this.#maxChunks) return false;
      this.#current += 1;
      this.#currentBytes = 0;
    }
    this.#open.set(this.#current, (this.#open.get(this.#current) ?? "") + line);
    this.#currentBytes += bytes;
    this.#dirty.add(this.#current);
    return true;
  }

  /** Whether lines wait to be written. */
  get pending(): boolean {
    return this.#dirty.size > 0;
  }

  /** Writes every changed chunk (one flush at a time); a failed write stays pending for the next flush. */
  flush(): Promise<void> {
    this.#flushing ??= this.#flushOnce().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async #flushOnce(): Promise<void> {
    for (const index of [...this.#dirty].sort((a, b) => a - b)) {
      const text = this.#open.get(index) ?? "";
      this.#dirty.delete(index);
      try {
        await this.#write(index, text);
      } catch (err) {
        this.#dirty.add(index);
        throw err;
      }
      // A chunk behind the current one is complete: written in full, it is never needed again.
      if (index < this.#current && !this.#dirty.has(index)) this.#open.delete(index);
    }
  }
}
