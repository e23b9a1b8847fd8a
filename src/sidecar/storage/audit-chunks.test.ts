import { describe, expect, it } from "vitest";
import { AuditChunks } from "./audit-chunks.ts";

function recorder(fail = () => false) {
  const writes: [number, string][] = [];
  const write = async (index: number, text: string) => {
    if (fail()) throw new Error("API server unavailable");
    writes.push([index, text]);
  };
  return { writes, write };
}

describe("AuditChunks", () => {
  it("packs lines into chunks of at most the chunk size, in order, writing only the changed ones", async () => {
    const r = recorder();
    const chunks = new AuditChunks(r.write, 10, 3);
    expect(chunks.accept("aaaa\n")).toBe(true);
    expect(chunks.accept("bbbb\n")).toBe(true);
    expect(chunks.accept("cccc\n")).toBe(true);
    await chunks.flush();
    expect(r.writes).toEqual([[0, "aaaa\nbbbb\n"], [1, "cccc\n"]]);
    expect(chunks.pending).toBe(false);
    chunks.accept("dd\n");
    await chunks.flush();
    expect(r.writes.slice(2)).toEqual([[1, "cccc\ndd\n"]]);
  });

  it("refuses lines beyond its bound (and a line larger than a chunk), so the call they record is refused", () => {
    const chunks = new AuditChunks(recorder().write, 10, 2);
    expect(chunks.accept("x".repeat(11))).toBe(false);
    expect(chunks.accept("123456789\n")).toBe(true);
    expect(chunks.accept("123456789\n")).toBe(true);
    expect(chunks.accept("1\n")).toBe(false);
  });

  it("keeps a chunk whose write failed for the next flush", async () => {
    let failing = true;
    const r = recorder(() => failing);
    const chunks = new AuditChunks(r.write, 100, 2);
    chunks.accept("one\n");
    await expect(chunks.flush()).rejects.toThrow("API server unavailable");
    expect(chunks.pending).toBe(true);
    failing = false;
    chunks.accept("two\n");
    await chunks.flush();
    expect(r.writes).toEqual([[0, "one\ntwo\n"]]);
  });

  it("continues after the last chunk an earlier start stored, extending it and never writing an earlier one", async () => {
    const r = recorder();
    const chunks = new AuditChunks(r.write, 10, 4);
    chunks.resume(1, "aaaa\n");
    expect(chunks.pending).toBe(false);
    expect(chunks.accept("bbbb\n")).toBe(true);
    expect(chunks.accept("cc\n")).toBe(true);
    await chunks.flush();
    expect(r.writes).toEqual([[1, "aaaa\nbbbb\n"], [2, "cc\n"]]);
  });

  it("opens the next chunk after a full one, and refuses once the full one was the last", () => {
    const full = new AuditChunks(recorder().write, 10, 3);
    full.resume(1, "123456789\n");
    expect(full.accept("x\n")).toBe(true);
    expect(full.accept("123456789\n")).toBe(false);
    const last = new AuditChunks(recorder().write, 10, 3);
    last.resume(2, "x".repeat(20));
    expect(last.accept("x\n")).toBe(false);
  });

  it("continues after a stored chunk whose text is not the sidecar's, never writing that chunk", async () => {
    const r = recorder();
    const chunks = new AuditChunks(r.write, 10, 3);
    chunks.resume(0, undefined);
    expect(chunks.accept("aa\n")).toBe(true);
    await chunks.flush();
    expect(r.writes).toEqual([[1, "aa\n"]]);
  });
});
