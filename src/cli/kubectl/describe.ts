// `kubectl leviath describe RUN`: one screen on a Run: phase, conditions, stage and sandboxes, pending prompts (id,
// tool, target), decision counts, result summary and the last refusals (from its audit, when readable).
import { KubeApiError } from "../../kube/errors.ts";
import type { RunStatus } from "../../api/status.ts";
import { buildAuditRow, parseAuditLines, readAuditTexts } from "./audit.ts";
import { getRun, type PluginContext, type RunObject } from "./plugin-context.ts";
import { formatAge, formatTable, truncateText } from "./table.ts";

/** `kubectl leviath describe --help`. */
export const DESCRIBE_HELP = `Usage: kubectl leviath describe RUN

Run RUN on one screen: its phase and message, what it is pinned to, its conditions, stage, taint and sandbox
pods, the prompts it waits on (id, tool, target: what 'kubectl leviath approve RUN ID' answers), its decisions
counted by source, its result, and its last refusals from the audit (read when you may read its audit ConfigMaps, as the namespace's Role
leviath-run-records grants; 'kubectl leviath why RUN CALL' explains one).
`;

/** Refusals the screen shows at most. */
const LAST_REFUSALS = 5;

const indent = (text: string) => text.trimEnd().split("\n").map((l) => `  ${l}`).join("\n");

function section(title: string, body: string | undefined): string {
  return body === undefined || body === "" ? `${title}: none\n` : `${title}:\n${indent(body)}\n`;
}

function describePinned(s: RunStatus | undefined): string {
  if (!s?.agent) return "not pinned yet";
  return `Agent ${s.agent.name} (generation ${s.agent.generation}), LeviathPolicy ${s.policy?.generation !== undefined ? `generation ${s.policy.generation}` : "defaults"}`;
}

function describeHead(run: RunObject): string {
  const s = run.status;
  const pinned = describePinned(s);
  const taint = s?.taint ? `${s.taint.level}${s.taint.tracking ? "" : " (tracking off)"}` : "-";
  return [
    `Name:       ${run.metadata.name}`, `Namespace:  ${run.metadata.namespace}`, `Pinned to:  ${pinned}`,
    `Phase:      ${s?.phase ?? "Pending"}${s?.message ? ` (${truncateText(s.message, 160)})` : ""}`,
    `Stage:      ${s?.stage ?? "-"}    Taint: ${taint}    Reads: ${s?.readPaths?.display ?? "-"}`, "",
  ].join("\n");
}

function describeStatus(s: RunStatus | undefined, nowMs: number): string {
  const conditions = (s?.conditions ?? []).map((c) => [c.type, c.status, c.reason, truncateText(c.message, 100)]);
  const sandboxes = (s?.sandboxes ?? []).map((b) => [b.pod, b.kind, b.stages.join(","), b.ready ? "yes" : b.fellBackToHost ? "fell back to host" : "no"]);
  const pending = (s?.pendingApprovals ?? []).map((p) => [p.id, p.kind, p.tool, truncateText(p.target ?? "", 60), p.stage ?? "", formatAge(p.raisedAt, nowMs)]);
  const counts = Object.entries(s?.gateDecisions ?? {}).map(([k, n]) => `${k} ${n}`).join(", ");
  return [
    section("Conditions", conditions.length ? formatTable(["TYPE", "STATUS", "REASON", "MESSAGE"], conditions) : undefined),
    section("Sandboxes", sandboxes.length ? formatTable(["POD", "KIND", "STAGES", "READY"], sandboxes) : undefined),
    section("Pending prompts", pending.length ? formatTable(["ID", "KIND", "TOOL", "TARGET", "STAGE", "AGE"], pending) : undefined),
    section("Not honoured by the runtime", (s?.runtimeWarnings ?? []).join("\n")),
    `Decisions:  ${counts || "none yet"}\n`,
    `Result:     ${describeResult(s)}\n`,
  ].join("");
}

function describeResult(s: RunStatus | undefined): string {
  const r = s?.result;
  if (r === undefined) return "none yet";
  const size = r.bytes === undefined ? "" : `${r.bytes} bytes, `;
  if (r.inline !== undefined) return `${size}inline: ${JSON.stringify(truncateText(r.inline.split("\n")[0] ?? "", 80))} ('kubectl leviath result' prints it)`;
  return `${size}in ConfigMap ${r.configMapName ?? "?"} ('kubectl leviath result' prints it)`;
}

async function describeRefusals(ctx: PluginContext, run: RunObject): Promise<string> {
  let texts: string[];
  try {
    texts = await readAuditTexts(ctx, run);
  } catch (err) {
    if (err instanceof KubeApiError) return `Last refusals: not shown (the audit ConfigMaps could not be read: HTTP ${err.code})\n`;
    throw err;
  }
  const refused = texts.flatMap(parseAuditLines).filter((l) => l.record["decision"] === "deny" || l.record["decision"] === "ask").slice(-LAST_REFUSALS);
  const rows = refused.map((l) => {
    const [time, , tool, decision, source] = buildAuditRow(l);
    return [time!, String(l.record["call_id"] ?? ""), tool!, decision!, source!, String(l.record["code"] ?? "")];
  });
  return section("Last refusals and prompts", rows.length ? formatTable(["TIME", "CALL", "TOOL", "DECISION", "SOURCE", "CODE"], rows) : undefined);
}

/** Prints the Run on one screen. */
export async function runDescribe(ctx: PluginContext, name: string): Promise<number> {
  const run = await getRun(ctx, name);
  ctx.io.stdout(`${describeHead(run)}${describeStatus(run.status, ctx.nowMs())}${await describeRefusals(ctx, run)}`);
  return 0;
}
