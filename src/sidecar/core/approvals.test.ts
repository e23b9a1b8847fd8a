import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ApprovalKind } from "../../metrics/sidecar-metrics.ts";
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

  it("withdraws a pending prompt once, remembers it as withdrawn until raised again, and refuses its answer", () => {
    const counts: number[] = [];
    const book = new ApprovalBook(() => Date.now(), (_k, n) => counts.push(n));
    const settled: string[] = [];
    book.raise(prompt("w"), 60, (s) => settled.push(s.kind));
    expect(book.withdraw("w")).toBe(true);
    expect(book.withdraw("w")).toBe(false);
    expect(book.withdraw("never")).toBe(false);
    expect(book.isWithdrawn("w")).toBe(true);
    expect(book.isWithdrawn("never")).toBe(false);
    expect(book.answer("w", "allowOnce")).toBe(false);
    vi.advanceTimersByTime(120_000);
    expect(settled).toEqual(["withdrawn"]);
    expect(counts).toEqual([1, 0]);
    book.raise(prompt("w"), undefined, (s) => settled.push(s.kind));
    expect(book.isWithdrawn("w")).toBe(false);
  });

  it("forgets the oldest withdrawn ids past 4096", () => {
    const book = new ApprovalBook(() => Date.now(), () => {});
    for (let i = 0; i < 4097; i++) {
      book.raise(prompt(`p${i}`), undefined, () => {});
      book.withdraw(`p${i}`);
    }
    expect(book.isWithdrawn("p0")).toBe(false);
    expect(book.isWithdrawn("p1")).toBe(true);
    expect(book.isWithdrawn("p4096")).toBe(true);
  });

  it("reports the number pending per kind after every change, with thousands of prompts pending", () => {
    const reported = new Map<ApprovalKind, number>();
    const book = new ApprovalBook(() => Date.now(), (kind, n) => reported.set(kind, n));
    const pendingOf = (kind: ApprovalKind) => book.list().filter((p) => p.kind === kind).length;
    const check = () => {
      expect(reported.get("taint_gate") ?? 0).toBe(pendingOf("taint_gate"));
      expect(reported.get("tool_approval") ?? 0).toBe(pendingOf("tool_approval"));
    };
    const kindOf = (i: number): ApprovalKind => (i % 3 === 0 ? "tool_approval" : "taint_gate");
    const settled: string[] = [];
    // Every fifth prompt expires after 10 s, the others wait forever.
    for (let i = 0; i < 3000; i++) book.raise({ ...prompt(`p${i}`), kind: kindOf(i) }, i % 5 === 0 ? 10 : undefined, (s) => settled.push(s.kind));
    expect(reported.get("tool_approval")).toBe(1000);
    expect(reported.get("taint_gate")).toBe(2000);
    check();
    // Answered, answered twice, unknown ids, and ids raised again (the old prompt is cancelled, the count stays).
    for (let i = 1; i < 3000; i += 4) expect(book.answer(`p${i}`, "deny")).toBe(true);
    expect(book.answer("p1", "deny")).toBe(false);
    expect(book.answer("nope", "allowOnce")).toBe(false);
    check();
    for (let i = 2; i < 3000; i += 10) book.raise({ ...prompt(`p${i}`), kind: kindOf(i) }, undefined, (s) => settled.push(s.kind));
    check();
    vi.advanceTimersByTime(10_000);
    check();
    const left = book.list().length;
    // 600 had a timeout; 150 of them (i ≡ 5 mod 20) were answered before it.
    expect(left).toBe(3000 - 750 - 450);
    expect(settled.filter((k) => k === "answer")).toHaveLength(750);
    expect(settled.filter((k) => k === "expired")).toHaveLength(450);
    expect(settled.filter((k) => k === "cancelled")).toHaveLength(300);
    book.cancelAll();
    expect(reported.get("tool_approval")).toBe(0);
    expect(reported.get("taint_gate")).toBe(0);
    expect(settled).toHaveLength(750 + 450 + 300 + left);
  });
});
