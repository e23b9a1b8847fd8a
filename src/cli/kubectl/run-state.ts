// `kubectl leviath result` and `wait`: a Run's result (status.result) and its phase.
import { createHash } from "node:crypto";
import { RUN_PHASES, TERMINAL_PHASES, type RunPhase, type RunResult } from "../../api/status.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { UsageError } from "../io.ts";
import { getRun, PluginFailure, type PluginContext } from "./plugin-context.ts";

/** `kubectl leviath result --help`. */
export const RESULT_HELP = `Usage: kubectl leviath result RUN

Prints what the Run's submit_output handed over (status.result, written by its sidecar): the text itself when
it is inline (up to 4096 bytes), else the key 'result' of the ConfigMap the status names, only when its SHA-256
is the one in status.result (a ConfigMap someone else wrote or changed is refused). When you may not read that
ConfigMap, it says where the result is. Exit 1 when the Run has no result: not yet (it is still running), or
never (it ended Failed or Cancelled without one; the Run's message says why).
`;

/** `kubectl leviath wait --help`. */
export const WAIT_HELP = `Usage: kubectl leviath wait RUN [--for PHASE] [--timeout DURATION]

Waits until Run RUN reaches a terminal phase (Succeeded, Failed, Cancelled), prints it with the Run's message,
and exits 0 only for Succeeded (1 for Failed, Cancelled, a timeout or a missing Run).

Options:
  --for PHASE          wait for this phase instead (${RUN_PHASES.join(", ")}): exit 0 once the Run is in it,
                       1 when the Run ends in another terminal phase first
  --timeout DURATION   give up after this long (30s, 5m, 1h, or seconds; default: no limit)
`;

const computeTextSha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

/**
 * The text of the result ConfigMap `result` names, when it is the one the sidecar wrote: anyone who may write
 * ConfigMaps can take or change the name, so only the text whose SHA-256 the sidecar recorded in the Run's status
 * (which no one else may write) is the Run's result. Undefined when it could not be read.
 */
async function readResultConfigMap(ctx: PluginContext, name: string, result: RunResult & { configMapName: string }, where: string): Promise<string | undefined> {
  try {
    const cm = await ctx.client.request<{ data?: Record<string, string> }>("GET", buildPath(RESOURCES.configMap, ctx.namespace, result.configMapName));
    const text = cm.data?.["result"];
    if (text === undefined) return undefined;
    if (computeTextSha256(text) !== result.sha256) throw new PluginFailure(`the result of run '${name}' is in ${where}, which does not hold what the sidecar wrote (its SHA-256 differs from status.result.sha256); not shown`);
    return text;
  } catch (err) {
    if (!(err instanceof KubeApiError) || (err.code !== 403 && err.code !== 404)) throw err;
    return undefined;
  }
}

/** Prints the Run's result, inline or from its ConfigMap (only the text whose SHA-256 the sidecar recorded). */
export async function runResult(ctx: PluginContext, name: string): Promise<number> {
  const run = await getRun(ctx, name);
  const result = run.status?.result;
  if (result?.inline !== undefined) {
    ctx.io.stdout(result.inline);
    return 0;
  }
  if (result?.configMapName !== undefined) {
    const where = `ConfigMap '${result.configMapName}' (key 'result'${result.bytes === undefined ? "" : `, ${result.bytes} bytes`}) in namespace ${ctx.namespace}`;
    const text = await readResultConfigMap(ctx, name, { ...result, configMapName: result.configMapName }, where);
    if (text === undefined) throw new PluginFailure(`the result of run '${name}' is in ${where}, which could not be read`);
    ctx.io.stdout(text);
    return 0;
  }
  throw new PluginFailure(describeMissingResult(name, run.status?.phase, run.status?.message));
}

/** Why a Run has no result: still on its way, or ended without one (with the Run's own message). */
export function describeMissingResult(name: string, phase: RunPhase | undefined, message: string | undefined): string {
  if (phase === undefined || !TERMINAL_PHASES.includes(phase)) return `run '${name}' has no result yet (phase ${phase ?? "Pending"})`;
  return `run '${name}' ended ${phase} without a result${message ? `: ${message}` : ""}`;
}

/** A `--for` value: one of the Run phases. */
export function parsePhase(text: string | undefined): RunPhase | undefined {
  if (text === undefined) return undefined;
  const phase = RUN_PHASES.find((p) => p.toLowerCase() === text.toLowerCase().replace(/^phase=/, ""));
  if (!phase) throw new UsageError(`--for '${text}' is not a phase (${RUN_PHASES.join(", ")})`);
  return phase;
}

/** Waits for the phase (or any terminal one) and says how it ended. */
export async function runWait(ctx: PluginContext, opts: { run: string; phase: RunPhase | undefined; timeoutMs: number | undefined }): Promise<number> {
  const deadline = opts.timeoutMs === undefined ? Number.POSITIVE_INFINITY : ctx.nowMs() + opts.timeoutMs;
  for (;;) {
    const run = await getRun(ctx, opts.run);
    const phase = run.status?.phase ?? "Pending";
    const terminal = TERMINAL_PHASES.includes(phase);
    if (phase === opts.phase || terminal) {
      const message = run.status?.message ? `: ${run.status.message}` : "";
      ctx.io.stdout(`run.leviath.dev/${opts.run} ${phase}${message}\n`);
      return phase === (opts.phase ?? "Succeeded") ? 0 : 1;
    }
    if (ctx.nowMs() >= deadline) throw new PluginFailure(`timed out waiting for run '${opts.run}' (phase ${phase})`);
    await ctx.sleep(Math.min(1000, Math.max(0, deadline - ctx.nowMs())));
  }
}
