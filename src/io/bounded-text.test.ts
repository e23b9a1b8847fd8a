import { describe, expect, it } from "vitest";
import { readBoundedText } from "./bounded-text.ts";

function streamOf(parts: string[]): { stream: ReadableStream<Uint8Array>; cancelled: () => boolean } {
  let cancelled = false;
  let i = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < parts.length) controller.enqueue(new TextEncoder().encode(parts[i++]));
      else controller.close();
    },
    cancel() { cancelled = true; },
  });
  return { stream, cancelled: () => cancelled };
}

describe("readBoundedText", () => {
  it("reads a body of exactly the cap whole", async () => {
    expect(await readBoundedText(streamOf(["12345", "67890"]).stream, 10, () => new Error("too large"))).toBe("1234567890");
  });

  it("throws the caller's error and cancels the stream one byte past the cap, before reading the rest", async () => {
    const body = streamOf(["12345", "678901", "never read"]);
    class Mine extends Error {}
    await expect(readBoundedText(body.stream, 10, () => new Mine("mine: over 10"))).rejects.toBeInstanceOf(Mine);
    expect(body.cancelled()).toBe(true);
  });

  it("reads no body as empty text", async () => {
    expect(await readBoundedText(null, 10, () => new Error("x"))).toBe("");
    expect(await readBoundedText(undefined, 10, () => new Error("x"))).toBe("");
  });
});
