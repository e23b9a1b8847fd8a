// The Run's result: what `submit_output` hands over once every check allowed it. Small outputs go inline in the
// Run's status, larger ones to a ConfigMap owned by the Run, and beyond a hard bound the call is refused (upstream
// cuts the answer at 256 KiB and flags it `truncated`; a cut answer is a different answer, so we refuse instead).
// A refused or failed submit_output stores nothing: the result is kept only after it is stored (in a cluster, in
// the Run's status, before the runtime is told the call was accepted).
import { createHash } from "node:crypto";
import { MAX_INLINE_RESULT_BYTES, MAX_RESULT_BYTES, type RunResult } from "../../api/status.ts";
import { buildRefusalMessage } from "../../api/sidecar-contract.ts";
import { RESULT_TOOL } from "../../api/tools.ts";

/** The key of the result ConfigMap that holds the output. */
export const RESULT_KEY = "result";

/** The output text of a `submit_output` call: `output` as written, or its JSON when it is not a string. */
export function extractOutput(args: Record<string, unknown>): string {
  const output = args["output"];
  if (typeof output === "string") return output;
  return JSON.stringify(output ?? args);
}

/** The size in bytes of a `submit_output` over the bound, or undefined when it fits (or the tool is another). */
export function measureOversizedResult(tool: string, args: Record<string, unknown>): number | undefined {
  if (tool !== RESULT_TOOL) return undefined;
  const bytes = Buffer.byteLength(extractOutput(args), "utf8");
  return bytes <= MAX_RESULT_BYTES ? undefined : bytes;
}

/** The refusal text of an output over the bound (`result-too-large`), or undefined when it fits. */
export function checkResultSize(tool: string, args: Record<string, unknown>): string | undefined {
  const bytes = measureOversizedResult(tool, args);
  return bytes === undefined ? undefined : buildRefusalMessage("result-too-large", tool, bytes);
}

/** One result to store. */
export interface ResultInput {
  readonly output: string;
  readonly callId: string;
  readonly stage: string;
}

/** Where the result is kept: inline, or in the named ConfigMap (the text that goes there). */
export interface PlannedResult {
  readonly status: RunResult;
  /** Set when the output goes to a ConfigMap: its text. */
  readonly external?: string;
}

/** Plans where a result goes; `configMapName` is the Run's result ConfigMap. */
export function planResult(input: ResultInput, configMapName: string): PlannedResult {
  const bytes = Buffer.byteLength(input.output, "utf8");
  const sha256 = createHash("sha256").update(input.output, "utf8").digest("hex");
  const meta = { bytes, sha256, callId: input.callId, stage: input.stage };
  if (bytes <= MAX_INLINE_RESULT_BYTES) return { status: { inline: input.output, ...meta } };
  return { status: { configMapName, ...meta }, external: input.output };
}

/** Stores a result; `ok: false` (with why) when it could not be, and then nothing counts as stored. */
export interface ResultSink {
  store(input: ResultInput): Promise<{ ok: true } | { ok: false; message: string }>;
  /** The stored result's reference, for `/v1/status` and the Run status. */
  current(): RunResult | undefined;
}

/** Where a sink writes: a larger output's text, and (in a cluster) the reference that makes the result durable. */
export interface ResultWriters {
  /** Writes an output over the inline bound (a ConfigMap, a file). */
  readonly external: (text: string) => Promise<void>;
  /** Stores the reference where a restart finds it (the Run's status); without it, memory is the record. */
  readonly reference?: (result: RunResult) => Promise<void>;
}

/**
 * A sink that writes a result (the text if large, then its reference) before it counts as stored, so the runtime
 * hears `run` only for an answer that survives the sidecar; `stored` is what an earlier start stored.
 */
export function createResultSink(configMapName: string, writers: ResultWriters, stored?: RunResult): ResultSink {
  let current = stored;
  return {
    async store(input) {
      const plan = planResult(input, configMapName);
      try {
        if (plan.external !== undefined) await writers.external(plan.external);
        await writers.reference?.(plan.status);
      } catch (err) {
        return { ok: false, message: (err as Error).message };
      }
      // The last allowed submit_output is the result, as upstream keeps one answer per run.
      current = plan.status;
      return { ok: true };
    },
    current: () => current,
  };
}
