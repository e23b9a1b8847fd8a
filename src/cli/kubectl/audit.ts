// `kubectl leviath audit`: a Run's audit records, read from its `<run>-audit-NNN` ConfigMaps as far as the sidecar's
// record of them in the Run's `status.audit` (name, size, SHA-256 of what it wrote) vouches for, in that record's
// order, which is the order they were written in (docs/operations.md). Anyone who may create ConfigMaps can take
// an audit name and set the Run as owner: such an object is named on stderr and never shown as the Run's.
import { UsageError } from "../io.ts";
import { LABEL } from "../../api/constants.ts";
import { TERMINAL_PHASES } from "../../api/status.ts";
import { buildLabelValue } from "../../sandbox/names.ts";
import { AUDIT_CHUNK_KEY } from "../../sidecar/storage/audit-chunks.ts";
import { describeIgnoredChunks, readVerifiedAudit, type ReadChunk } from "../../sidecar/storage/audit-digests.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { formatTable, truncateText } from "./table.ts";
import { getRun, type PluginContext, type RunObject } from "./plugin-context.ts";

/** `kubectl leviath audit --help`. */
export const AUDIT_HELP = `Usage: kubectl leviath audit RUN [-f] [-o table|calls|json]

The audit records of Run RUN, in the order its sidecar wrote them, from its ConfigMaps RUN-audit-000, -001, ...
Only what the sidecar recorded in the Run's status.audit (each ConfigMap's size and SHA-256) is shown; a
ConfigMap under an audit name that it did not write, or that changed since, is named in a warning on stderr and
not shown. They stay readable after the pod is gone, until the Run is deleted. Needs get on those ConfigMaps:
the namespace's Role leviath-run-records grants exactly that (bind it to the people who read audits); with list
on ConfigMaps too, ConfigMaps under an audit name the record does not vouch for are also named.

Options:
  -f, --follow          keep printing records as the sidecar writes them, until the Run ends (Succeeded,
                        Failed or Cancelled; exit 0) or is deleted (exit 1); Ctrl-C stops it
  -o, --output FORMAT   table (default): time, file, tool, decision, source and detail of each record;
                        calls: one row per call, its records in order as one story (the permission's
                        decision, the taint gate's, the answer to a prompt), the call's last decision first;
                        json: each line as stored, {"leviath_audit": {"run", "file", "record"}}, one per line
`;

/** One stored audit line. */
export interface AuditLine {
  run: string;
  file: string;
  record: Record<string, unknown>;
}

interface ConfigMapObject {
  metadata: { name: string };
  data?: Record<string, string>;
}

/** The audit lines of `text` (one ConfigMap's chunk); a line that is not an audit line is skipped. */
export function parseAuditLines(text: string): AuditLine[] {
  return text.split("\n").flatMap((line) => {
    if (!line.trim()) return [];
    try {
      const parsed = (JSON.parse(line) as { leviath_audit?: AuditLine }).leviath_audit;
      return parsed && typeof parsed.record === "object" && parsed.record !== null ? [parsed] : [];
    } catch {
      return [];
    }
  });
}

const str = (v: unknown): string => (v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v));

/** One call as the audit tells it: its records in the order they were written (a record without a call id is a call of its own). */
export interface CallStory {
  readonly id: string | undefined;
  readonly lines: AuditLine[];
}

/** The audit's records grouped by call id, calls in the order of their first record; pure. */
export function groupAuditByCall(lines: readonly AuditLine[]): CallStory[] {
  const stories: CallStory[] = [];
  const byId = new Map<string, CallStory>();
  for (const line of lines) {
    const id = typeof line.record["call_id"] === "string" ? line.record["call_id"] : undefined;
    const known = id === undefined ? undefined : byId.get(id);
    if (known) {
      known.lines.push(line);
      continue;
    }
    const story = { id, lines: [line] };
    stories.push(story);
    if (id !== undefined) byId.set(id, story);
  }
  return stories;
}

/** Which check wrote a record, from its file: the taint gate (`taint_audit.jsonl`) or the permission (`decisions.jsonl`). */
const checkOf = (file: string): string => (file.endsWith("taint_audit.jsonl") ? "gate" : file.endsWith("decisions.jsonl") ? "permission" : file);

/**
 * A call's row: when its first record was written, its call id, tool, the last decision, and each record in order as
 * `check decision (source)`, joined by ` → `, so a call both the permission and the gate held reads as one story.
 */
export function buildCallRow(story: CallStory): string[] {
  const first = story.lines[0]!;
  const last = story.lines[story.lines.length - 1]!;
  const steps = story.lines.map((l) => `${checkOf(l.file)} ${str(l.record["decision"])}${l.record["decision_source"] === undefined ? "" : ` (${str(l.record["decision_source"])})`}${l.record["approved_by"] === undefined ? "" : ` by ${str(l.record["approved_by"])}`}`);
  return [buildAuditRow(first)[0]!, story.id ?? "", str(first.record["tool_name"]), str(last.record["decision"]), steps.join(" → ")];
}

/** A record's table row: when (UTC), which file, tool, decision, source and what else it says. */
export function buildAuditRow(line: AuditLine): string[] {
  const r = line.record;
  const ts = typeof r["timestamp"] === "number" ? new Date(r["timestamp"] * 1000).toISOString().replace(".000Z", "Z") : str(r["timestamp"]);
  const shown = new Set(["timestamp", "agent_id", "tool_name", "decision", "decision_source", "stage"]);
  const detail = Object.entries(r).filter(([k]) => !shown.has(k)).map(([k, v]) => `${k}=${str(v)}`).join(" ");
  return [ts, line.file, str(r["tool_name"]), str(r["decision"]), str(r["decision_source"]), truncateText(detail, 100)];
}

/**
 * The Run's audit ConfigMaps as its sidecar recorded them in `status.audit`: each one's verified text, in order, and
 * every ConfigMap under an audit name that the record does not vouch for, refused (never shown as the Run's).
 */
export async function readAuditChunks(ctx: PluginContext, run: RunObject): Promise<ReadChunk[]> {
  const selector = `${LABEL.run}=${buildLabelValue(run.metadata.name)},${LABEL.component}=audit`;
  // Without `list` on ConfigMaps (the namespace's `leviath-run-records` Role grants `get` by name only), the chunks
  // the ledger names are read one by one, and ConfigMaps under an audit name it does not name are not seen at all.
  const list = await ctx.client.request<{ items: ConfigMapObject[] }>("GET", buildPath(RESOURCES.configMap, ctx.namespace), { query: { labelSelector: selector } }).catch((err: unknown) => {
    if (err instanceof KubeApiError && err.code === 403) return { items: [] };
    throw err;
  });
  const found = new Map<string, string | undefined>(list.items.map((cm) => [cm.metadata.name, cm.data?.[AUDIT_CHUNK_KEY]]));
  const ledger = run.status?.audit?.chunks ?? [];
  // One the sidecar recorded but whose labels someone took off is read by name.
  for (const entry of ledger.filter((e) => !found.has(e.name))) {
    const cm = await ctx.client.request<ConfigMapObject>("GET", buildPath(RESOURCES.configMap, ctx.namespace, entry.name)).catch((err: unknown) => {
      if (err instanceof KubeApiError && err.code === 404) return undefined;
      throw err;
    });
    if (cm !== undefined) found.set(entry.name, cm.data?.[AUDIT_CHUNK_KEY]);
  }
  return readVerifiedAudit(ledger, found);
}

/** The verified texts of the Run's audit ConfigMaps, in the order they were written ({@link readAuditChunks}). */
export async function readAuditTexts(ctx: PluginContext, run: RunObject): Promise<string[]> {
  return (await readAuditChunks(ctx, run)).flatMap((c) => ("text" in c ? [c.text] : []));
}

const AUDIT_HEADER = ["TIME", "FILE", "TOOL", "DECISION", "SOURCE", "DETAIL"];
/** How `audit` prints: a row per record, a row per call, or the stored lines. */
export type AuditOutput = "table" | "calls" | "json";

/** An `-o` value of `audit` (default table); a call's story is whole only once its last record is written, so `calls` does not follow. */
export function parseAuditOutput(text: string | undefined, follow: boolean): AuditOutput {
  const output = text ?? "table";
  if (output !== "table" && output !== "calls" && output !== "json") throw new UsageError(`-o '${output}' is not table, calls or json`);
  if (output === "calls" && follow) throw new UsageError("-o calls tells each call's whole story and cannot follow (-f): use -o table or json with -f");
  return output;
}
const CALLS_HEADER = ["TIME", "CALL", "TOOL", "DECISION", "STORY"];

/** Prints `lines` as stored JSON or as table rows (the header only before the first rows printed). */
function printLines(ctx: PluginContext, lines: readonly AuditLine[], output: AuditOutput, header: boolean): void {
  if (output === "json") {
    for (const line of lines) ctx.io.stdout(`${JSON.stringify({ leviath_audit: line })}\n`);
    return;
  }
  if (output === "calls") {
    ctx.io.stdout(formatTable(CALLS_HEADER, groupAuditByCall(lines).map(buildCallRow)));
    return;
  }
  const table = formatTable(AUDIT_HEADER, lines.map(buildAuditRow));
  ctx.io.stdout(header ? table : table.slice(table.indexOf("\n") + 1));
}

/**
 * Prints the Run's audit, as a table or as the stored JSON lines; following, it reads the ConfigMaps again every
 * second and prints what was appended, until the Run is in a terminal phase (read before the records, so the last
 * read holds everything written before it ended).
 */
export async function runAudit(ctx: PluginContext, opts: { run: string; output: AuditOutput; follow?: boolean }): Promise<number> {
  let shown = 0;
  for (;;) {
    const run = await getRun(ctx, opts.run);
    const ended = TERMINAL_PHASES.includes(run.status?.phase ?? "Pending");
    const chunks = await readAuditChunks(ctx, run);
    const lines = chunks.flatMap((c) => ("text" in c ? parseAuditLines(c.text) : []));
    if (lines.length > shown) printLines(ctx, lines.slice(shown), opts.output, shown === 0);
    if (shown === 0 && lines.length === 0 && opts.output !== "json") ctx.io.stderr(`No audit records for run '${opts.run}' in namespace ${ctx.namespace} yet.\n`);
    shown = Math.max(shown, lines.length);
    const last = opts.follow !== true || ended;
    // Said once, at the last read: while the Run goes on, a chunk's newest bytes wait for their status record.
    const ignored = last ? describeIgnoredChunks(chunks) : undefined;
    if (ignored !== undefined) ctx.io.stderr(`warning: ${ignored}\n`);
    if (last) return 0;
    await ctx.sleep(1000);
  }
}
