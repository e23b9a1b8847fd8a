import { afterEach, describe, expect, it, vi } from "vitest";
import { CapExceededError, createCappedFetch, createFrameMeter } from "./capped-fetch.ts";

function replyWith(parts: string[], contentType: string): void {
  const body = new ReadableStream<Uint8Array>({ start(c) { for (const p of parts) c.enqueue(new TextEncoder().encode(p)); c.close(); } });
  vi.stubGlobal("fetch", async () => new Response(body, { headers: { "content-type": contentType } }));
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("createFrameMeter", () => {
  it("counts the frame in progress across chunks, a blank line (LF or CRLF) ending it", () => {
    const over = createFrameMeter(12);
    expect(over(new TextEncoder().encode("data: 1\n\n"))).toBe(false);
    expect(over(new TextEncoder().encode("data: 12\r\n\r\ndata"))).toBe(false);
    expect(over(new TextEncoder().encode(": 12345"))).toBe(false);
    expect(over(new TextEncoder().encode("67"))).toBe(true);
  });
});

describe("createCappedFetch", () => {
  it("passes a body within its cap and fails one past it, naming the peer, and telling onCap", async () => {
    const heard: string[] = [];
    const capped = createCappedFetch({ peer: "peer.example:80", onCap: (m) => heard.push(m), caps: { bodyBytes: 10, frameBytes: 4 } });
    replyWith(["12345", "67890"], "application/json");
    expect(await (await capped("http://peer.example/")).text()).toBe("1234567890");
    replyWith(["12345", "678901"], "application/json");
    const err = await (await capped("http://peer.example/")).text().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CapExceededError);
    expect((err as Error).message).toBe("response body exceeded 10 bytes from peer.example:80");
    expect(heard).toEqual(["response body exceeded 10 bytes from peer.example:80"]);
  });

  it("holds each SSE frame, not the stream, to the frame cap; the peer defaults to the URL's hostname", async () => {
    const capped = createCappedFetch({ caps: { bodyBytes: 10, frameBytes: 12 } });
    replyWith(["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"], "text/event-stream");
    expect(await (await capped("http://sse.example:8080/")).text()).toBe("data: 1\n\ndata: 2\n\ndata: 3\n\n");
    replyWith(["data: 1234567890\n\n"], "text/event-stream");
    await expect((await capped("http://sse.example:8080/")).text()).rejects.toThrow("stream frame exceeded 12 bytes from sse.example");
  });
});
