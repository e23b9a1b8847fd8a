import { describe, expect, it } from "vitest";
import { readCappedText, readSseEvents } from "./capped-read.ts";

function streamOf(parts: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({ start(c) { for (const p of parts) c.enqueue(new TextEncoder().encode(p)); c.close(); } });
}

async function events(parts: string[], cap?: number) {
  const out = [];
  for await (const e of readSseEvents(streamOf(parts), "peer.example", cap)) out.push(e);
  return out;
}

describe("readSseEvents", () => {
  it("splits frames on blank lines wherever the chunks break, LF or CRLF, joining data lines", async () => {
    expect(await events(["event: a\ndata: 1\n", "\ndata: 2\r\n\r", "\n: comment\n\ndata: x\ndata: y", "\n\n", "data: é", "nd"])).toEqual([
      { event: "a", data: "1" }, { event: "", data: "2" }, { event: "", data: "x\ny" }, { event: "", data: "énd" },
    ]);
  });

  it("keeps a multi-byte character split over two chunks", async () => {
    const bytes = new TextEncoder().encode("data: ü\n\n");
    const s = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(bytes.subarray(0, 7)); c.enqueue(bytes.subarray(7)); c.close(); } });
    const out = [];
    for await (const e of readSseEvents(s, "p")) out.push(e.data);
    expect(out).toEqual(["ü"]);
  });

  it("refuses a frame past the cap, complete or partial, naming the cap and the peer", async () => {
    await expect(events(["data: 123456789\n\n"], 10)).rejects.toThrow("stream frame exceeded 10 bytes from peer.example");
    await expect(events(["data: 1234", "56789"], 10)).rejects.toThrow("stream frame exceeded 10 bytes from peer.example");
    expect(await events(["data: 123\n\n"], 10)).toEqual([{ event: "", data: "123" }]);
  });
});

describe("readCappedText", () => {
  it("reads a body of exactly the cap and refuses one byte more", async () => {
    expect(await readCappedText(streamOf(["12345", "67890"]), "h", 10)).toBe("1234567890");
    await expect(readCappedText(streamOf(["12345", "678901"]), "h", 10)).rejects.toThrow("response body exceeded 10 bytes from h");
  });
});
