import { describe, expect, it } from "vitest";
import { createDispatcherReuse } from "./client.ts";

type Fake = { id: number; closed: boolean; close(): Promise<void> };
const fake = (id: number): Fake => ({ id, closed: false, close() { this.closed = true; return Promise.resolve(); } });

describe("createDispatcherReuse", () => {
  it("keeps the first pool while it is young, and closes it once replaced", () => {
    let now = 0;
    const reuse = createDispatcherReuse(() => now, 1000) as unknown as (d: Fake | undefined) => Fake | undefined;
    const first = fake(1);
    expect(reuse(first)).toBe(first);
    now = 999;
    expect(reuse(fake(2))?.id).toBe(1);
    expect(first.closed).toBe(false);
    now = 1000;
    const third = fake(3);
    expect(reuse(third)).toBe(third);
    expect(first.closed).toBe(true);
    now = 1500;
    expect(reuse(fake(4))).toBe(third);
  });

  it("leaves a request without a pool (plain HTTP, no TLS material) as it is", () => {
    const reuse = createDispatcherReuse(() => 0);
    expect(reuse(undefined)).toBeUndefined();
  });
});
