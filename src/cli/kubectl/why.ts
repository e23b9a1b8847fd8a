// `kubectl leviath why RUN [CALL]`: why a call of the Run was refused or asked (the last such call without CALL),
// from its audit records (the Run's audit ConfigMaps) and the run policy it was pinned to (its `<run>-policy`
// ConfigMap), with the smallest change that would allow it in the syntax the user edits (why-explain.ts).
import { RunPolicySchema, type RunPolicy } from "../../api/run-policy.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { buildChildNames } from "../../sandbox/names.ts";
import { SNAPSHOT_KEY } from "../../sandbox/run-snapshot.ts";
import { UsageError } from "../io.ts";
import { parseAuditLines, readAuditTexts, type AuditLine } from "./audit.ts";
import { getRun, PluginFailure, type PluginContext, type RunObject } from "./plugin-context.ts";
import type { Change, Syntax } from "./why-change.ts";
import { explainCall, type CallRecords, type Explanation } from "./why-explain.ts";

/** `kubectl leviath why --help`. */
export const WHY_HELP = `Usage: kubectl leviath why RUN [CALL] [--syntax yaml|toml]

Why a call of Run RUN was refused or asked: the rule that decided it (the decision source; the tool permission and
whether the LeviathPolicy's ceiling, the Agent or the default set it; the read-path verdict; the taint gate's taint,
clearance and target) and the smallest change that would allow it, as a snippet to merge into the LeviathPolicy or
the Agent. CALL is a call id from 'kubectl leviath audit RUN' (call_id=...); without it, the last call whose last
decision was a refusal or a prompt.

While a LeviathPolicy generation is out as a warn or audit candidate (docs/operations.md, "Rolling out a
policy"), it also says how the candidate would have decided the call ("would flip": the decision now and under the
candidate, and the rule or field each rests on), and how many calls of the Run would flip under a warn candidate.

It reads the Run's audit ConfigMaps (as 'audit') and its run policy (ConfigMap RUN-policy; when that cannot be read,
the layer that set a permission is not named): the namespace's Role leviath-run-records grants get on both.

Options:
  --syntax yaml|toml   snippets for the LeviathPolicy and the Agent (yaml, the default), or for upstream's
                       config.toml, policy.toml and agent.leviath (toml)
`;

/** A `--syntax` value. */
export function parseSyntax(text: string | undefined): Syntax {
  if (text === undefined || text === "yaml" || text === "toml") return text ?? "yaml";
  throw new UsageError(`--syntax '${text}' is not yaml or toml`);
}

const REFUSED = new Set(["deny", "ask"]);
const callOf = (l: AuditLine) => (typeof l.record["call_id"] === "string" ? l.record["call_id"] : undefined);

/** The records of the call `id` (or the last refused or asked call); undefined when there is none. */
export function pickCall(lines: readonly AuditLine[], id: string | undefined): { id: string; records: CallRecords } | undefined {
  const lastByCall = new Map<string, number>();
  lines.forEach((l, i) => {
    const c = callOf(l);
    // A would-flip is no decision on the call (it is recorded beside the decision, before it).
    if (c !== undefined && l.record["decision"] !== "would_flip") lastByCall.set(c, i);
  });
  const chosen = id ?? [...lastByCall.entries()].filter(([, i]) => REFUSED.has(String(lines[i]!.record["decision"]))).sort((a, b) => a[1] - b[1]).at(-1)?.[0];
  const at = chosen === undefined ? undefined : lastByCall.get(chosen);
  if (chosen === undefined || at === undefined) return undefined;
  const decision = lines[at]!.record;
  const gate = lines.slice(0, at).filter((l) => l.file.endsWith("taint_audit.jsonl") && l.record["tool_name"] === decision["tool_name"]).at(-1)?.record;
  return { id: chosen, records: { decision, ...(gate ? { gate } : {}) } };
}

async function readRunPolicy(ctx: PluginContext, run: string): Promise<RunPolicy | undefined> {
  try {
    const cm = await ctx.client.request<{ data?: Record<string, string> }>("GET", buildPath(RESOURCES.configMap, ctx.namespace, buildChildNames(run).configMap));
    const parsed = RunPolicySchema.safeParse(JSON.parse(cm.data?.[SNAPSHOT_KEY.runPolicy] ?? "null"));
    return parsed.success ? parsed.data : undefined;
  } catch (err) {
    if (err instanceof KubeApiError || err instanceof SyntaxError) return undefined;
    throw err;
  }
}

function formatChange(c: Change): string {
  return `  in ${c.where}:\n${c.lines.map((l) => `      ${l}`).join("\n")}\n`;
}

/** The text `why` prints for one call. */
export function formatExplanation(run: string, id: string, records: CallRecords, e: Explanation): string {
  const d = records.decision;
  const head = `run ${run}, call ${id} (${String(d["tool_name"])}${d["stage"] ? `, stage ${String(d["stage"])}` : ""}): ${String(d["decision"])}, decision source ${String(d["decision_source"])}${d["code"] ? ` (${String(d["code"])})` : ""}\n`;
  const change = e.changes.length === 0 ? "change:  none in the policy\n" : `change:  the smallest that would allow it${e.changes.length > 1 ? " (all of these)" : ""}\n${e.changes.map(formatChange).join("")}`;
  return `${head}rule:    ${e.rule}\n${change}${e.note ? `note:    ${e.note}\n` : ""}`;
}

function agentKeyOf(run: RunObject, rp: RunPolicy | undefined): string {
  return rp?.agent.key ?? `${run.metadata.namespace}/${run.status?.agent?.name ?? "<agent>"}`;
}

/** The would-flips recorded for call `id` (a warn or audit candidate decided it otherwise), one line each. */
export function formatWouldFlips(lines: readonly AuditLine[], id: string): string {
  return lines.filter((l) => callOf(l) === id && l.record["decision"] === "would_flip").map((l) => {
    const f = (l.record["would_flip"] ?? {}) as Record<string, unknown>;
    return `would flip: under the ${String(f["enforcement"])} candidate (LeviathPolicy generation ${String(f["policy_generation"])}): ${String(f["now"])} -> ${String(f["candidate"])} (${String(f["differs"])})\n`;
  }).join("");
}

/** The Run's would-flips under a warn candidate, from its status, as one line (empty: none). */
function formatFlipCount(run: RunObject): string {
  const flips = run.status?.policyFlips;
  return flips === undefined ? "" : `${flips.count} call(s) of this run would flip under the warn candidate (LeviathPolicy generation ${flips.generation})${flips.last ? `; last: ${flips.last}` : ""}\n`;
}

/** Explains one call of the Run. */
export async function runWhy(ctx: PluginContext, opts: { run: string; call: string | undefined; syntax: Syntax }): Promise<number> {
  const run = await getRun(ctx, opts.run);
  const lines = (await readAuditTexts(ctx, run)).flatMap(parseAuditLines);
  const picked = pickCall(lines, opts.call);
  if (picked === undefined) {
    const known = [...new Set(lines.map(callOf).filter((c): c is string => c !== undefined))].slice(-5);
    throw new PluginFailure(opts.call === undefined
      ? `run '${opts.run}' has no refused or asked call in its audit${run.status?.policyFlips ? `; ${formatFlipCount(run).trim()}` : ""}`
      : `run '${opts.run}' has no call '${opts.call}' in its audit${known.length > 0 ? ` (last calls: ${known.join(", ")})` : ""}`);
  }
  const rollout = `${formatWouldFlips(lines, picked.id)}${formatFlipCount(run)}`;
  if (!REFUSED.has(String(picked.records.decision["decision"]))) {
    ctx.io.stdout(`run ${opts.run}, call ${picked.id}: ${String(picked.records.decision["decision"])} (decision source ${String(picked.records.decision["decision_source"])}): nothing refused it\n${rollout}`);
    return 0;
  }
  const runPolicy = await readRunPolicy(ctx, opts.run);
  const explanation = explainCall({ records: picked.records, runPolicy, agentKey: agentKeyOf(run, runPolicy), syntax: opts.syntax });
  ctx.io.stdout(`${formatExplanation(opts.run, picked.id, picked.records, explanation)}${rollout}`);
  return 0;
}
