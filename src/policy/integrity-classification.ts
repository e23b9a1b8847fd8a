// A tool's integrity classification (issue 40): who could have written what it returns, and what a call does. The
// built-ins are one table keyed by canonical name (a new built-in does not compile until it is classified here); an
// admin's override (`taint.toolOverrides.<tool>`) replaces the fields it sets; any other tool (an MCP server's, a
// gateway's, a script tool) returns untrusted data and reaches someone until classified (fail closed).
import type { IntegrityLevel, ToolEffect } from "../api/integrity-policy.ts";
import { findBuiltinTool, type BuiltinToolName } from "../api/tools.ts";
import type { ClassificationOverride } from "./classification.ts";
import { parseDirection } from "./classification.ts";
import type { PathCheck } from "./call-paths.ts";

/**
 * Where a result's integrity comes from: a fixed label, or, for the file tools and the shell, the admin's declaration
 * for the files read (`files`: the workdir's or the read paths', per path) or the sandbox (`sandbox`: untrusted when
 * its network is on, else the workdir's).
 */
export type ResultIntegritySource = IntegrityLevel | "files" | "sandbox";

/** A tool's integrity classification. */
export interface IntegrityClassification {
  readonly results: ResultIntegritySource;
  readonly effect: ToolEffect;
  /** Its targets are checked at any taint (the override's `checkTargets`, or the policy's global switch). */
  readonly checkTargets: boolean;
}

type Entry = Readonly<{ results: ResultIntegritySource; effect: ToolEffect }>;
const e = (results: ResultIntegritySource, effect: ToolEffect): Entry => Object.freeze({ results, effect });
const SCRATCH = e("trusted", "read");

/**
 * The built-ins. `submit_output` hands the answer to whoever started the Run: it acts on nobody, so it is a read here
 * (its text is still gated for confidentiality). `web_search` reaches only the admin's backend, with no target. The
 * context, todo and prompt tools are the agent's own scratch; the sub-agent tools start work with text the model
 * wrote, so they act.
 */
const BUILTIN: Readonly<Record<BuiltinToolName, Entry>> = {
  read_file: e("files", "read"),
  read_files: e("files", "read"),
  list_dir: e("files", "read"),
  write_file: e("trusted", "own"),
  edit_file: e("trusted", "own"),
  shell: e("sandbox", "reach"),
  submit_output: e("trusted", "read"),
  web_fetch: e("untrusted", "reach"),
  http_get: e("untrusted", "reach"),
  http_post: e("untrusted", "reach"),
  web_search: e("untrusted", "read"),
  fetch: e("untrusted", "reach"),
  install_tool: e("untrusted", "own"),
  edit_document: e("trusted", "own"),
  context_write: SCRATCH,
  context_append: SCRATCH,
  context_read: SCRATCH,
  context_delete: SCRATCH,
  context_list: SCRATCH,
  todo_add: SCRATCH,
  todo_done: SCRATCH,
  todo_note: SCRATCH,
  current_time: SCRATCH,
  locale_info: SCRATCH,
  system_info: SCRATCH,
  environment_info: SCRATCH,
  which_command: SCRATCH,
  runtime_info: SCRATCH,
  ask_user_text: SCRATCH,
  ask_user_choice: SCRATCH,
  ask_user_confirm: SCRATCH,
  present_for_review: SCRATCH,
  spawn_agent: e("untrusted", "own"),
  check_agent: e("untrusted", "read"),
  wait_for_agent: e("untrusted", "read"),
  send_to_agent: e("untrusted", "own"),
  kill_agent: e("trusted", "own"),
  fan_out: e("untrusted", "own"),
};

/** What a tool not built in is: untrusted results, reaches someone. */
export const UNKNOWN_TOOL_INTEGRITY: Entry = e("untrusted", "reach");

/** The effect a direction implies when an override sets a direction but no effect. */
function effectOfDirection(direction: string | undefined): ToolEffect | undefined {
  const parsed = direction === undefined ? undefined : parseDirection(direction);
  if (parsed === undefined) return undefined;
  return parsed === "inbound" ? "read" : parsed === "internal" ? "own" : "reach";
}

/** The integrity classification of `tool`: built-in or unknown, then the override's fields, then the global target switch. */
export function resolveIntegrityClassification(tool: string, override: ClassificationOverride | undefined, checkTargetsAll: boolean): IntegrityClassification {
  const builtin = findBuiltinTool(tool);
  const base = builtin === undefined ? UNKNOWN_TOOL_INTEGRITY : BUILTIN[builtin.name as BuiltinToolName];
  // A built-in keeps its own effect unless the override names one; another tool's direction implies one.
  const effect = override?.effect ?? (builtin === undefined ? effectOfDirection(override?.direction) : undefined) ?? base.effect;
  return { results: override?.integrity ?? base.results, effect, checkTargets: override?.checkTargets ?? checkTargetsAll };
}

/** Whether a call of this effect acts (is held under an untrusted context). */
export function isActing(effect: ToolEffect): boolean {
  return effect !== "read";
}

/** What resolves a result's integrity source: the admin's declarations, and what the call read or ran in. */
export interface ResultIntegrityContext {
  readonly workdir: IntegrityLevel;
  readonly readPaths: IntegrityLevel;
  /** How each path the call read was resolved; absent: not known (the lower of the two declarations). */
  readonly paths?: readonly PathCheck[] | undefined;
  /** The stage's sandbox has network; absent: not known (untrusted). */
  readonly sandboxNetwork?: boolean | undefined;
}

function lower(a: IntegrityLevel, b: IntegrityLevel): IntegrityLevel {
  return a === "untrusted" || b === "untrusted" ? "untrusted" : "trusted";
}

/** The integrity of one result: the fixed label, or the files' (per path read) or the sandbox's. */
export function resolveResultIntegrity(source: ResultIntegritySource, ctx: ResultIntegrityContext): IntegrityLevel {
  if (source === "trusted" || source === "untrusted") return source;
  // With network, a command's output can hold anything from anywhere.
  if (source === "sandbox") return ctx.sandboxNetwork === false ? ctx.workdir : "untrusted";
  if (ctx.paths === undefined) return lower(ctx.workdir, ctx.readPaths);
  let out: IntegrityLevel = "trusted";
  for (const p of ctx.paths) {
    const r = p.resolution;
    if (!r.ok || r.decision === "null_device") continue;
    out = lower(out, r.decision === "inside_workdir" ? ctx.workdir : ctx.readPaths);
  }
  return out;
}
