import { describe, expect, it } from "vitest";
import { OldestFirst } from "./oldest-first.ts";

type Item = { seq: number };

function drain(q: OldestFirst<Item>): number[] {
  const out: number[] = [];
  for (let x = q.take(); x !== undefined; x = q.take()) out.push(x.seq);
  return out;
}

describe("OldestFirst", () => {
  it("gives items back lowest sequence first, whatever order they came in", () => {
    const q = new OldestFirst<Item>();
    for (const seq of [3, 4, 1, 7, 2, 9, 8, 0, 5, 6]) q.add({ seq });
    expect(q.size).toBe(10);
    expect(drain(q)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(q.size).toBe(0);
    expect(q.take()).toBeUndefined();
  });

  it("always takes the lowest sequence held, over many interleaved adds and takes, against a sorted model", () => {
    const q = new OldestFirst<Item>();
    const model: number[] = [];
    // A fixed pseudo-random walk: mostly in order, one in ten late, takes in between.
    let state = 12345;
    const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let seq = 0;
    const held: number[] = [];
    for (let step = 0; step < 20_000; step++) {
      const r = next();
      if (r < 0.5) {
        const s = seq++;
        // One in ten settles late: it waits and is added later.
        if (next() < 0.1) held.push(s);
        else {
          q.add({ seq: s });
          model.push(s);
        }
      } else if (r < 0.55 && held.length > 0) {
        const s = held.splice(Math.floor(next() * held.length), 1)[0]!;
        q.add({ seq: s });
        model.push(s);
      } else if (model.length > 0) {
        model.sort((a, b) => a - b);
        expect(q.take()?.seq).toBe(model.shift());
      }
      expect(q.size).toBe(model.length);
    }
    for (const s of held) {
      q.add({ seq: s });
      model.push(s);
    }
    expect(drain(q)).toEqual(model.sort((a, b) => a - b));
  });
});
