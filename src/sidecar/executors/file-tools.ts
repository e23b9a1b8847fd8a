// The built-in file tools, executed by the sidecar itself so the check and the read cannot be separated
// (DESIGN.md §4). Paths are resolved by the read-path core (read tools may fall back to [read_paths], write
// tools never leave the workdir); files are then opened through checked-open, on the real path that was judged.
import { closeSync, lstatSync, readdirSync, statSync } from "node:fs";
import type { z } from "zod";
import { buildRefusalMessage, lookupRefusalSource, type RefusalMessageArgs, type RefusalSource } from "../../api/sidecar-contract.ts";
import { listToolsOf, type BUILTIN_TOOLS, type ToolsOf } from "../../api/tools.ts";
import { buildPathRefusal, resolveCallPaths, type CallPaths, type PathCheck } from "../../policy/call-paths.ts";
import type { RefusedPath, ResolveContext } from "../../policy/read-paths/index.ts";
import { openCheckedForRead, openCheckedForWrite, readDescriptor, replaceDescriptorContent, type CheckedOpen } from "./checked-open.ts";
import { errnoCode, formatOsError } from "./os-error.ts";

/** A file tool. */
export type FileTool = ToolsOf<"file">;
/** The tools the sidecar executes on files (their entries in api/tools.ts name the `file` executor). */
export const FILE_TOOLS: readonly FileTool[] = listToolsOf("file");

/** Largest file a read returns; a model reads text, and the sidecar's memory is bounded. */
export const MAX_READ_BYTES = 16 * 1024 * 1024;
/**
 * What one `read_files` call may return in total, however many files it names: 8 MiB, half a `read_file`,
 * because its answer is built from one more copy (the files joined) and the sidecar lives in 256 Mi
 * (docs/benchmarks-history.md, `sidecar-memory`).
 */
export const MAX_READ_FILES_TOTAL_BYTES = 8 * 1024 * 1024;

/** Parsed arguments of a file tool. */
export type FileToolArgs = { [T in FileTool]: z.infer<(typeof BUILTIN_TOOLS)[T]["args"]> };

/** Whether the sidecar executes this tool on files. */
export function isFileTool(tool: string): tool is FileTool {
  return (FILE_TOOLS as readonly string[]).includes(tool);
}

/** The codes a file tool refuses a whole call with (403; their rows name the step, the decision source). */
type FileRefusalCode = RefusedPath["code"] | "path-changed" | "hard-link";

/** A refusal of the whole call: its code, and the row's message and decision source. */
export interface FileRefusal {
  readonly code: FileRefusalCode;
  /** The tool result the model is given, upstream's `[error] <message>`. */
  readonly message: string;
  readonly source: RefusalSource;
}

function fileRefusal<C extends FileRefusalCode>(code: C, ...args: RefusalMessageArgs<C>): FileRefusal {
  return { code, message: buildRefusalMessage(code, ...args), source: lookupRefusalSource(code) };
}

/** The requested paths of one call, in order. */
export function listRequestedPaths(tool: FileTool, args: FileToolArgs[FileTool]): string[] {
  return tool === "read_files" ? [...(args as FileToolArgs["read_files"]).paths] : [(args as { path: string }).path];
}

/** The paths a file tool's call names, for the read-path step of its decision: write tools stay inside the workdir. */
export function buildCallPaths(tool: FileTool, args: FileToolArgs[FileTool], context: ResolveContext): CallPaths {
  return { requests: listRequestedPaths(tool, args), access: tool === "write_file" || tool === "edit_file" ? "write" : "read", context };
}

/** Resolve every path of a call (what the decision does), for a file tool run on its own. */
export function checkFilePaths(tool: FileTool, args: FileToolArgs[FileTool], ctx: ResolveContext): PathCheck[] {
  return resolveCallPaths(buildCallPaths(tool, args, ctx));
}

function refusalOf(r: RefusedPath): FileRefusal {
  return { ...buildPathRefusal(r), source: lookupRefusalSource(r.code) };
}

function changedRefusal(request: string): FileRefusal {
  return fileRefusal("path-changed", request);
}

function linkedRefusal(request: string, links: number): FileRefusal {
  return fileRefusal("hard-link", request, links);
}

/** A file tool's outcome: a refusal of the whole call, or a result (which may be an error text). */
export type FileToolOutcome =
  | { readonly kind: "refused"; readonly refusal: FileRefusal }
  | { readonly kind: "done"; readonly result: string; readonly isError: boolean };

const done = (result: string, isError = false): FileToolOutcome => ({ kind: "done", result, isError });
const refused = (refusal: FileRefusal): FileToolOutcome => ({ kind: "refused", refusal });

type Opened = { kind: "fd"; fd: number } | { kind: "refused"; refusal: FileRefusal } | { kind: "error"; error: unknown };

/**
 * A final symlink refused by O_NOFOLLOW (ELOOP) is one that did not resolve when the path was checked: a
 * dangling link or a loop. Report what following it gives now (upstream's not-found or loop error), unless it
 * resolves now: then the tree changed after the check, and the read is refused.
 */
function explainFinalSymlink(path: string): { kind: "error"; error: unknown } | undefined {
  try {
    statSync(path);
  } catch (now) {
    return { kind: "error", error: now };
  }
  return undefined;
}

/** O_NOFOLLOW refused a symlink: ELOOP, or ENOTDIR when a directory was asked for. */
function isFinalSymlink(path: string, error: unknown): boolean {
  const code = errnoCode(error);
  if (code === "ELOOP") return true;
  if (code !== "ENOTDIR") return false;
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

function openResolved(check: PathCheck, open: (realPath: string) => CheckedOpen, forRead = true): Opened {
  const r = check.resolution;
  if (!r.ok) return { kind: "refused", refusal: refusalOf(r) };
  const path = r.canonicalPath ?? r.openPath;
  const opened = open(path);
  if (opened.ok) return { kind: "fd", fd: opened.fd };
  // A write never follows it: ELOOP stands (upstream would create the file wherever the link points).
  if (forRead && opened.reason === "os" && isFinalSymlink(path, opened.error)) {
    return explainFinalSymlink(path) ?? { kind: "refused", refusal: changedRefusal(check.request) };
  }
  if (opened.reason === "changed") return { kind: "refused", refusal: changedRefusal(check.request) };
  if (opened.reason === "linked") return { kind: "refused", refusal: linkedRefusal(check.request, opened.links) };
  return { kind: "error", error: opened.error };
}

type ReadText = { ok: true; text: string } | { ok: false; why: "directory" | string };

function readText(fd: number, cap = MAX_READ_BYTES): ReadText {
  try {
    const r = readDescriptor(fd, cap);
    if (r.ok) return { ok: true, text: r.data.toString("utf8") };
    if (r.reason === "directory") return { ok: false, why: "directory" };
    if (r.reason === "not-regular") return { ok: false, why: "not a regular file" };
    if (r.reason === "too-large" && cap < MAX_READ_BYTES) return { ok: false, why: `the files of one read_files call may hold ${MAX_READ_FILES_TOTAL_BYTES / 1024 / 1024} MiB together; this one passes what is left (read it on its own)` };
    if (r.reason === "too-large") return { ok: false, why: `file is larger than the ${MAX_READ_BYTES / 1024 / 1024} MiB read limit` };
    return { ok: false, why: "error" in r ? formatOsError(r.error) : r.reason };
  } finally {
    closeSync(fd);
  }
}

/** `/dev/null` (or `nul`): reads are empty and writes are discarded, without opening anything. */
function isNullDevice(check: PathCheck): boolean {
  return check.resolution.ok && check.resolution.decision === "null_device";
}

function readFile(check: PathCheck): FileToolOutcome {
  const req = check.request;
  if (isNullDevice(check)) return done("");
  const opened = openResolved(check, (p) => openCheckedForRead(p, false));
  if (opened.kind === "refused") return refused(opened.refusal);
  if (opened.kind === "error") return done(`[error] Failed to read '${req}': ${formatOsError(opened.error)}`, true);
  const text = readText(opened.fd);
  if (text.ok) return done(text.text);
  if (text.why === "directory") {
    return done(`[error] '${req}' is a directory, not a file. Use list_dir to see what is in it, then read_file on one of the entries.`, true);
  }
  return done(`[error] Failed to read '${req}': ${text.why}`, true);
}

interface Element {
  readonly text: string;
  readonly ok: boolean;
  readonly changed: boolean;
}

/** The bytes a `read_files` call may still return. */
interface ReadBudget {
  left: number;
}

function readFilesElement(check: PathCheck, budget: ReadBudget): Element {
  const head = `### [${check.request}]\n`;
  if (isNullDevice(check)) return { text: head, ok: true, changed: false };
  const opened = openResolved(check, (p) => openCheckedForRead(p, false));
  if (opened.kind === "refused") return { text: head + opened.refusal.message, ok: false, changed: opened.refusal.source === "path_changed" };
  if (opened.kind === "error") return { text: `${head}[error] Failed to read: ${formatOsError(opened.error)}`, ok: false, changed: false };
  const text = readText(opened.fd, Math.min(MAX_READ_BYTES, budget.left));
  if (text.ok) {
    budget.left -= Buffer.byteLength(text.text, "utf8");
    return { text: head + text.text, ok: true, changed: false };
  }
  const why = text.why === "directory" ? "Is a directory (os error 21)" : text.why;
  return { text: `${head}[error] Failed to read: ${why}`, ok: false, changed: false };
}

function listDir(check: PathCheck): FileToolOutcome {
  const req = check.request;
  const opened = openResolved(check, (p) => openCheckedForRead(p, true));
  if (opened.kind === "refused") return refused(opened.refusal);
  if (opened.kind === "error") return done(`[error] Failed to read directory '${req}': ${formatOsError(opened.error)}`, true);
  try {
    // Listed through the descriptor, so it is the directory that was checked, whatever the path now names.
    const entries = readdirSync(`/proc/self/fd/${opened.fd}`, { withFileTypes: true })
      .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
      .sort();
    return done(entries.length === 0 ? "(empty directory)" : entries.join("\n"));
  } catch (error) {
    return done(`[error] Failed to read directory '${req}': ${formatOsError(error)}`, true);
  } finally {
    closeSync(opened.fd);
  }
}

function writeFile(check: PathCheck, content: string): FileToolOutcome {
  const req = check.request;
  if (isNullDevice(check)) return done(`Wrote ${Buffer.byteLength(content, "utf8")} bytes to '${req}'`);
  const opened = openResolved(check, (p) => openCheckedForWrite(p, { create: true }), false);
  if (opened.kind === "refused") return refused(opened.refusal);
  if (opened.kind === "error") return done(`[error] Failed to write '${req}': ${formatOsError(opened.error)}`, true);
  try {
    const data = Buffer.from(content, "utf8");
    replaceDescriptorContent(opened.fd, data);
    return done(`Wrote ${data.length} bytes to '${req}'`);
  } catch (error) {
    return done(`[error] Failed to write '${req}': ${formatOsError(error)}`, true);
  } finally {
    closeSync(opened.fd);
  }
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

function editFile(check: PathCheck, args: FileToolArgs["edit_file"]): FileToolOutcome {
  const req = check.request;
  if (args.old_str === "") return done(`[error] old_str must not be empty`, true);
  if (isNullDevice(check)) return done(`[error] old_str not found in '${req}'`, true);
  const opened = openResolved(check, (p) => openCheckedForWrite(p, { create: false }), false);
  if (opened.kind === "refused") return refused(opened.refusal);
  if (opened.kind === "error") return done(`[error] Failed to read '${req}': ${formatOsError(opened.error)}`, true);
  try {
    const r = readDescriptor(opened.fd, MAX_READ_BYTES);
    if (!r.ok) return done(`[error] Failed to read '${req}': ${r.reason === "os" ? formatOsError(r.error) : r.reason}`, true);
    const text = r.data.toString("utf8");
    const count = countOccurrences(text, args.old_str);
    if (count === 0) return done(`[error] old_str not found in '${req}'`, true);
    if (count > 1) return done(`[error] old_str occurs ${count} times in '${req}'; include more context to make it unique`, true);
    replaceDescriptorContent(opened.fd, Buffer.from(text.replace(args.old_str, () => args.new_str), "utf8"));
    return done(`Edited '${req}'`);
  } catch (error) {
    return done(`[error] Failed to write '${req}': ${formatOsError(error)}`, true);
  } finally {
    closeSync(opened.fd);
  }
}

/** Execute a file tool on paths already checked by `checkFilePaths` (and not refused as a whole). */
export function executeFileTool(tool: FileTool, args: FileToolArgs[FileTool], checks: readonly PathCheck[]): FileToolOutcome {
  const first = checks[0]!;
  switch (tool) {
    case "read_file":
      return readFile(first);
    case "list_dir":
      return listDir(first);
    case "write_file":
      return writeFile(first, (args as FileToolArgs["write_file"]).content);
    case "edit_file":
      return editFile(first, args as FileToolArgs["edit_file"]);
    case "read_files": {
      const budget: ReadBudget = { left: MAX_READ_FILES_TOTAL_BYTES };
      const parts = checks.map((c) => readFilesElement(c, budget));
      // Nothing was read and a path moved under us: refuse the call, as for a single path.
      const changed = checks.find((_, i) => parts[i]!.changed);
      if (changed !== undefined && parts.every((p) => !p.ok)) return refused(changedRefusal(changed.request));
      return done(parts.map((p) => p.text).join("\n\n"), parts.every((p) => !p.ok));
    }
  }
}
