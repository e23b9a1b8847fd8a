import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApprovalBook, type ApprovalSettlement } from "./approvals.ts";

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(1_000_000);
});
afterEach(() => {
  vi.useRealTimers();
});

const prompt = (id: string) => ({ id, kind: "taint_gate" as const, callId: id, tool: "shell", stage: "main", prompt: "Allow it?", options: ["Allow once"] });

describe("ApprovalBook", () => {
  it("settles a prompt once by its answer, with the time it waited", () => {
    const counts: number[] = [];
    const book = new ApprovalBook(() => Date.now(), (_k, n) => counts.push(n));
    const settled: [ApprovalSettlement, number][] = [];
    const a = book.raise(prompt("gate-1"), 60, (s, w) => settled.push([s, w]));
    expect(a).toMatchObject({ raisedAt: new Date(1_000_000).toISOString(), expiresAt: new Date(1_060_000).toISOString() });
    vi.advanceTimersByTime(2500);
    expect(book.answer("gate-1", "deny", "no")).toBe(true);
    expect(book.answer("gate-1", "allowOnce")).toBe(false);
    vi.advanceTimersByTime(120_000);
    expect(settled).toEqual([[{ kind: "answer", decision: "deny", reason: "no" }, 2.5]]);
    expect(counts).toEqual([1, 0]);
  });

  it("expires a prompt at its timeout, and never one that waits forever", () => {
    const book = new ApprovalBook(() => Date.now(), () => {});
    const settled: string[] = [];
    book.raise(prompt("a"), 1, (s) => settled.push(`a:${s.kind}`));
    book.raise(prompt("b"), undefined, (s) => settled.push(`b:${s.kind}`));
    vi.advanceTimersByTime(999);
    expect(settled).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(settled).toEqual(["a:expired"]);
    vi.advanceTimersByTime(10_000_000);
    expect(book.list().map((p) => p.id)).toEqual(["b"]);
    expect(book.get("b")?.expiresAt).toBeUndefined();
    book.cancelAll();
    expect(settled).toEqual(["a:expired", "b:cancelled"]);
    expect(book.list()).toEqual([]);
  });
});
