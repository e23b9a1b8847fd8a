// `kubectl leviath pending`: the prompts Runs wait on (`status.pendingApprovals`, written by each Run's sidecar).
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { elideMiddle, formatAge, formatTable } from "./table.ts";
import type { PluginContext, RunObject } from "./plugin-context.ts";
import { splitHeldPromptText } from "../../policy/held-call.ts";

/** `kubectl leviath pending --help`. */
export const PENDING_HELP = `Usage: kubectl leviath pending [-A] [--watch] [-n NAMESPACE]

The prompts Runs wait on, from each Run's status.pendingApprovals (written by its sidecar): namespace, run,
the prompt's id (what 'kubectl leviath approve RUN ID' answers), kind (taint_gate or tool_approval), tool,
stage, age and the prompt text on one line (past 120 characters its middle is cut, so both its start and
the question at its end stay; a prompt for a call held for several reasons keeps each reason, each cut alone).

Options:
  -A, --all-namespaces   every namespace you may list Runs in
  -w, --watch            read again every 2 s and print the table again whenever it changes (Ctrl-C stops)
`;

/** One row per pending prompt of `runs`, oldest Run first as the API server lists them. */
export function buildPendingRows(runs: readonly RunObject[], nowMs: number): string[][] {
  return runs.flatMap((run) => (run.status?.pendingApprovals ?? []).map((p) => [
    run.metadata.namespace, run.metadata.name, p.id, p.kind, p.tool, p.stage ?? "", formatAge(p.raisedAt, nowMs), shortenPrompt(p.prompt ?? ""),
  ]));
}

/** How much of a prompt the table shows: a gate's whole question fits; a longer one keeps both ends. */
const PROMPT_CHARS = 120;

/** A prompt on one line: cut in its middle past PROMPT_CHARS; one held for several reasons, each reason cut alone. */
function shortenPrompt(prompt: string): string {
  const parts = splitHeldPromptText(prompt);
  return parts.length === 1 ? elideMiddle(prompt, PROMPT_CHARS) : parts.map((p) => elideMiddle(p, PROMPT_CHARS)).join(" ");
}

const HEADER = ["NAMESPACE", "RUN", "ID", "KIND", "TOOL", "STAGE", "AGE", "PROMPT"];
const AGE_COLUMN = HEADER.indexOf("AGE");

/** Lists Runs (in the namespace, or all) and returns the table of their prompts, or the line saying there are none. */
async function readPending(ctx: PluginContext, all: boolean): Promise<{ table: string; key: string; empty: boolean }> {
  const list = await ctx.client.request<{ items: RunObject[] }>("GET", buildPath(RESOURCES.run, all ? undefined : ctx.namespace));
  const rows = buildPendingRows(list.items, ctx.nowMs());
  // The ages move on every read: --watch prints again only when the prompts themselves changed.
  const key = JSON.stringify(rows.map((r) => r.filter((_, i) => i !== AGE_COLUMN)));
  if (rows.length === 0) return { table: `No pending prompts${all ? "" : ` in namespace ${ctx.namespace}`}.\n`, key, empty: true };
  return { table: formatTable(HEADER, rows), key, empty: false };
}

/** Prints the pending prompts once, or keeps printing them as they change with `--watch`. */
export async function runPending(ctx: PluginContext, opts: { all: boolean; watch: boolean }): Promise<number> {
  let last: string | undefined;
  for (;;) {
    const { table, key, empty } = await readPending(ctx, opts.all);
    if (key !== last) {
      if (empty && !opts.watch) ctx.io.stderr(table);
      else ctx.io.stdout(last === undefined ? table : `\n${table}`);
      last = key;
    }
    if (!opts.watch) return 0;
    await ctx.sleep(2000);
  }
}
