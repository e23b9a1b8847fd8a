// An append-only JSON Lines file. Each record is one write(2) on an O_APPEND descriptor before the caller goes
// on, so a record survives the sidecar being killed the moment after; fdatasync runs in the background at most
// `syncIntervalMs` later (and on close), which bounds what a kernel crash or power loss can take.
import { closeSync, fdatasync, fdatasyncSync, fstatSync, mkdirSync, openSync, readSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/** Default delay before written records are flushed to the disk. */
export const DEFAULT_SYNC_INTERVAL_MS = 1000;

/** One append-only JSON Lines file, opened on first use. */
export class JsonLinesFile {
  readonly path: string;
  readonly #syncIntervalMs: number;
  #fd: number | undefined;
  #timer: NodeJS.Timeout | undefined;

  /** A file at `path`; its directory is created (mode 0700) when the first record is written. */
  constructor(path: string, syncIntervalMs = DEFAULT_SYNC_INTERVAL_MS) {
    this.path = path;
    this.#syncIntervalMs = syncIntervalMs;
  }

  #open(): number {
    if (this.#fd !== undefined) return this.#fd;
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    const fd = openSync(this.path, "a", 0o600);
    // A record cut short by a crash must not swallow the next one: start it on a fresh line.
    const size = fstatSync(fd).size;
    if (size > 0) {
      const last = Buffer.alloc(1);
      const reader = openSync(this.path, "r");
      try {
        readSync(reader, last, 0, 1, size - 1);
      } finally {
        closeSync(reader);
      }
      if (last[0] !== 0x0a) writeSync(fd, "\n");
    }
    this.#fd = fd;
    return fd;
  }

  /** Append lines (each ending in a newline) in one write; throws when the file cannot be written. */
  append(lines: string): void {
    const fd = this.#open();
    // The string goes to write(2) as it is; a Buffer is made only in the rare case of a short write.
    const written = writeSync(fd, lines);
    const length = Buffer.byteLength(lines, "utf8");
    if (written < length) this.#appendRest(fd, Buffer.from(lines, "utf8"), written);
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#backgroundSync(), this.#syncIntervalMs);
      this.#timer.unref();
    }
  }

  #appendRest(fd: number, data: Buffer, from: number): void {
    let written = from;
    while (written < data.length) written += writeSync(fd, data, written);
  }

  /** The periodic flush runs on libuv's thread pool: a slow disk must not stall decisions. */
  #backgroundSync(): void {
    this.#timer = undefined;
    // The next write reports a failing disk; a background flush has nobody to tell.
    if (this.#fd !== undefined) fdatasync(this.#fd, () => {});
  }

  /** Flush what was written to the disk now (waits for it). */
  sync(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#fd === undefined) return;
    try {
      fdatasyncSync(this.#fd);
    } catch {
      // As above: nobody to tell, and the next write will fail loudly.
    }
  }

  /** Flush and close. */
  close(): void {
    this.sync();
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}
