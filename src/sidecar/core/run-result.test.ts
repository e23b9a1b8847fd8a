import { describe, expect, it } from "vitest";
import { MAX_INLINE_RESULT_BYTES, MAX_RESULT_BYTES } from "../../api/status.ts";
import { checkResultSize, createResultSink, extractOutput, planResult } from "./run-result.ts";

describe("the Run's result", () => {
  it("takes `output` as written, and the JSON of anything else", () => {
    expect(extractOutput({ output: "# done\n" })).toBe("# done\n");
    expect(extractOutput({ output: { ok: true } })).toBe('{"ok":true}');
  });

  it("keeps up to the inline limit in the status and moves larger outputs to the ConfigMap", () => {
    const small = planResult({ output: "é".repeat(MAX_INLINE_RESULT_BYTES / 2), callId: "c1", stage: "s" }, "r-result");
    expect(small.status).toMatchObject({ inline: "é".repeat(MAX_INLINE_RESULT_BYTES / 2), bytes: MAX_INLINE_RESULT_BYTES, callId: "c1", stage: "s" });
    expect(small.external).toBeUndefined();
    const large = planResult({ output: "x".repeat(MAX_INLINE_RESULT_BYTES + 1), callId: "c2", stage: "s" }, "r-result");
    expect(large.status).toMatchObject({ configMapName: "r-result", bytes: MAX_INLINE_RESULT_BYTES + 1 });
    expect(large.status.inline).toBeUndefined();
    expect(large.external).toHaveLength(MAX_INLINE_RESULT_BYTES + 1);
  });

  it("refuses an output over the bound, counting bytes, not characters", () => {
    expect(checkResultSize("submit_output", { output: "x".repeat(MAX_RESULT_BYTES) })).toBeUndefined();
    expect(checkResultSize("submit_output", { output: "é".repeat(MAX_RESULT_BYTES / 2 + 1) })).toMatch(/at most 262144/);
    expect(checkResultSize("shell", { output: "x".repeat(MAX_RESULT_BYTES + 1) })).toBeUndefined();
  });

  it("stores nothing when the ConfigMap write fails", async () => {
    const sink = createResultSink("r-result", {
      external: async () => {
        throw new Error("forbidden");
      },
    });
    expect(await sink.store({ output: "x".repeat(MAX_INLINE_RESULT_BYTES + 1), callId: "c", stage: "s" })).toEqual({ ok: false, message: "forbidden" });
    expect(sink.current()).toBeUndefined();
    expect(await sink.store({ output: "ok", callId: "c2", stage: "s" })).toEqual({ ok: true });
    expect(sink.current()).toMatchObject({ inline: "ok", callId: "c2" });
  });

  it("counts a result as stored only once its reference is written, whatever its size, and starts from what was stored", async () => {
    const written: unknown[] = [];
    let failing = false;
    const stored = { inline: "earlier", bytes: 7, callId: "c0", stage: "s" };
    const sink = createResultSink("r-result", {
      external: async (text) => void written.push(text.length),
      reference: async (r) => {
        if (failing) throw new Error("API server unavailable");
        written.push(r);
      },
    }, stored);
    expect(sink.current()).toEqual(stored);
    expect(await sink.store({ output: "ok", callId: "c1", stage: "s" })).toEqual({ ok: true });
    expect(written).toEqual([expect.objectContaining({ inline: "ok", callId: "c1" })]);
    failing = true;
    expect(await sink.store({ output: "x".repeat(MAX_INLINE_RESULT_BYTES + 1), callId: "c2", stage: "s" })).toEqual({ ok: false, message: "API server unavailable" });
    expect(sink.current()).toMatchObject({ inline: "ok", callId: "c1" });
  });
});
