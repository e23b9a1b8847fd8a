// Items taken back lowest sequence number first, in O(1) amortized when they are added in order. The tool-call
// service keeps its settled calls here, apart from the pending ones, so forgetting the oldest never walks the calls
// still pending ahead of them. Most calls settle in the order they came: those go to a queue. One that settles after
// a younger one (a prompt answered late, a long shell command) waits in a min-heap by its sequence number.

/** Something that knows its place in the order it came in. */
export interface Sequenced {
  readonly seq: number;
}

/** A queue of items taken back lowest `seq` first. */
export class OldestFirst<T extends Sequenced> {
  #queue: (T | undefined)[] = [];
  #head = 0;
  /** A binary min-heap by `seq`, of the items added after a younger one. */
  readonly #late: T[] = [];

  /** How many items it holds. */
  get size(): number {
    return this.#queue.length - this.#head + this.#late.length;
  }

  /** Adds an item (the same item may be added twice; it then comes back twice). */
  add(item: T): void {
    const last = this.#queue.length > this.#head ? this.#queue[this.#queue.length - 1]! : undefined;
    if (last === undefined || item.seq > last.seq) this.#queue.push(item);
    else this.#pushLate(item);
  }

  /** Removes and returns the item with the lowest `seq`, or undefined when empty. */
  take(): T | undefined {
    const first = this.#queue[this.#head];
    const late = this.#late[0];
    if (first !== undefined && (late === undefined || first.seq < late.seq)) return this.#shift(first);
    return late === undefined ? undefined : this.#popLate();
  }

  #shift(first: T): T {
    // The slot lets go of the item at once, so a forgotten call is not kept alive by the queue.
    this.#queue[this.#head++] = undefined;
    // Drop the emptied slots once they are half the array: O(1) amortized.
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return first;
  }

  #pushLate(item: T): void {
    const h = this.#late;
    let i = h.push(item) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.seq <= item.seq) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = item;
  }

  #popLate(): T {
    const h = this.#late;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= h.length) break;
      const right = left + 1;
      const child = right < h.length && h[right]!.seq < h[left]!.seq ? right : left;
      if (h[child]!.seq >= last.seq) break;
      h[i] = h[child]!;
      i = child;
    }
    h[i] = last;
    return top;
  }
}
