import { describe, expect, it } from "vitest";
import { createWorkQueue } from "./work-queue.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("createWorkQueue", () => {
  it("dedupes a key that is already waiting", async () => {
    const q = createWorkQueue();
    q.add("a");
    q.add("b");
    q.add("a");
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe("a");
    expect(await q.get()).toBe("b");
  });

  it("never hands out a key in flight; re-queues it once when added meanwhile", async () => {
    const q = createWorkQueue();
    q.add("a");
    const first = await q.get();
    q.add("a");
    q.add("a");
    expect(q.len()).toBe(0);
    q.done(first!);
    expect(q.len()).toBe(1);
    expect(await q.get()).toBe("a");
    q.done("a");
    expect(q.len()).toBe(0);
  });

  it("wakes a waiting worker", async () => {
    const q = createWorkQueue();
    const next = q.get();
    q.add("x");
    expect(await next).toBe("x");
  });

  it("delays, keeping the earliest requested time", async () => {
    const q = createWorkQueue();
    q.addAfter("a", 10_000);
    q.addAfter("a", 20);
    await sleep(60);
    expect(q.len()).toBe(1);
    q.shutDown();
  });

  it("backs off a failing key exponentially and forgets on success", async () => {
    const q = createWorkQueue({ baseDelayMs: 20, maxDelayMs: 1000 });
    q.addRateLimited("a");
    await sleep(50);
    expect(q.len()).toBe(1);
    const key = await q.get();
    q.done(key!);
    q.addRateLimited("a"); // second failure: 40 ms
    await sleep(25);
    expect(q.len()).toBe(0);
    await sleep(40);
    expect(q.len()).toBe(1);
    q.forget("a");
    q.shutDown();
  });

  it("releases waiting workers on shutdown", async () => {
    const q = createWorkQueue();
    const next = q.get();
    q.shutDown();
    expect(await next).toBeUndefined();
    q.add("late");
    expect(q.len()).toBe(0);
  });
});
