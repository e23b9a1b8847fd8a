// The text of a tool-permission prompt: the tool and what it would act on (the command, the paths, the target
// and arguments), so a person can judge what they approve. Bounded and printable: a model-chosen argument can
// neither flood the prompt nor hide part of itself behind control characters or a fake line break.
import { extractCallTargets, type ToolTargetRule } from "../../policy/targets.ts";
import { SHELL_TOOLS } from "./call-inputs.ts";
import { isFileTool } from "../executors/file-tools.ts";

/** How much of an argument a prompt shows, in characters. */
export const MAX_PROMPT_ARGUMENT_CHARS = 500;

/** Characters that would move the cursor, erase or reorder what a person reads, and `\` (so an escape is never ambiguous). */
// eslint-disable-next-line no-control-regex -- control characters are exactly what it must find
const UNPRINTABLE = /[\\\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const SHORT_ESCAPES: Readonly<Record<string, string>> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** Text shown safely: unprintable characters escaped, cut at `max` characters with the number left out. */
export function formatPromptArgument(text: string, max = MAX_PROMPT_ARGUMENT_CHARS): string {
  const escaped = text.replace(UNPRINTABLE, (c) => SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const chars = [...escaped];
  if (chars.length <= max) return escaped;
  return `${chars.slice(0, max).join("")}… (${chars.length - max} more characters)`;
}

function describeArguments(tool: string, args: Record<string, unknown>, declared: ToolTargetRule | undefined): string {
  if (SHELL_TOOLS.has(tool)) return `command: ${formatPromptArgument(String(args["command"]))}`;
  if (isFileTool(tool)) {
    const paths = Array.isArray(args["paths"]) ? (args["paths"] as unknown[]).map(String).join(", ") : String(args["path"] ?? ".");
    return `${Array.isArray(args["paths"]) ? "paths" : "path"}: ${formatPromptArgument(paths)}`;
  }
  const { targets } = extractCallTargets(tool, args, declared);
  const json = formatPromptArgument(JSON.stringify(args));
  if (targets.length === 0) return `arguments: ${json}`;
  return `${targets.length === 1 ? "target" : "targets"}: ${formatPromptArgument(targets.join(", "))}; arguments: ${json}`;
}

/** `Allow tool 'write_file'? path: notes.md`, `Allow shell command: ls -la`; `declared` is the tool's declared target. */
export function buildPermissionPrompt(tool: string, args: Record<string, unknown>, declared?: ToolTargetRule): string {
  if (SHELL_TOOLS.has(tool)) return `Allow shell command: ${formatPromptArgument(String(args["command"]))}`;
  return `Allow tool '${formatPromptArgument(tool, 100)}'? ${describeArguments(tool, args, declared)}`;
}

/** How much of a call's target a pending prompt's summary shows, in characters (the Run's status, `kubectl get`). */
export const MAX_TARGET_CHARS = 200;

/**
 * What a call acts on, for the pending prompt's summary: the command, the path(s), else its targets (`declared`: the
 * tool's declared target, for a gateway tool).
 */
export function describeCallTarget(tool: string, args: Record<string, unknown>, declared?: ToolTargetRule): string | undefined {
  let text: string | undefined;
  if (SHELL_TOOLS.has(tool)) text = String(args["command"] ?? "");
  else if (isFileTool(tool)) text = Array.isArray(args["paths"]) ? (args["paths"] as unknown[]).map(String).join(", ") : String(args["path"] ?? ".");
  else text = extractCallTargets(tool, args, declared).targets.join(", ");
  return text === undefined || text === "" ? undefined : formatPromptArgument(text, MAX_TARGET_CHARS);
}
