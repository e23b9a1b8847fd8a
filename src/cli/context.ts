import { realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { formatIssue, formatWarnings, type LoadIssue } from "../config/load-error.ts";
import { loadAgent, loadPolicyFiles, STDIN_PATH, type LoadedAgent, type LoadedPolicy } from "../config/load.ts";
import { buildMcpToolName } from "../policy/mcp-overrides.ts";
import { resolveLeviathHome } from "../policy/read-paths/index.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";

/** A refusal to go on, with the exit status it deserves and the lines already printed. */
export class CliStop extends Error {
  override readonly name = "CliStop";
  readonly status: number;
  constructor(status: number) {
    super(`exit ${status}`);
    this.status = status;
  }
}

/** Print load issues to stderr. */
export function printIssues(io: CliIo, issues: LoadIssue[], label = "error"): void {
  for (const i of issues) io.stderr(`${label}: ${formatIssue(i)}\n`);
}

/** Print load warnings to stderr, unused upstream keys summarised in one block per file. */
export function printWarnings(io: CliIo, warnings: readonly LoadIssue[]): void {
  for (const line of formatWarnings(warnings)) io.stderr(`${line}\n`);
}

/** The `~` of read-path entries: `LEVIATH_HOME` when set (even empty), else the OS home, exactly as upstream. */
export function homeOf(io: CliIo): string | undefined {
  return resolveLeviathHome(io.env, io.homedir);
}

/** A canonical, existing directory for `--workdir`, or a usage error naming the flag. */
export function canonicalWorkdir(io: CliIo, given: string | undefined, flag = "--workdir"): string {
  const dir = resolve(io.cwd, given ?? ".");
  try {
    const real = realpathSync.native(dir);
    if (!statSync(real).isDirectory()) throw new UsageError(`${flag} '${given}' is not a directory`);
    return real;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`${flag} '${given ?? "."}' does not exist`);
  }
}

/** A file argument as the loaders take it: absolute, or `-` (stdin) as given. */
export function resolveInput(io: CliIo, path: string): string;
export function resolveInput(io: CliIo, path: string | undefined): string | undefined;
export function resolveInput(io: CliIo, path: string | undefined): string | undefined {
  return path === undefined || path === STDIN_PATH ? path : resolve(io.cwd, path);
}

/** Stdin can be read once: a usage error when more than one of the named arguments is `-`. */
export function checkOneStdin(args: Record<string, string | undefined>): void {
  const named = Object.entries(args).filter(([, v]) => v === STDIN_PATH).map(([k]) => k);
  if (named.length > 1) throw new UsageError(`only one file can come from stdin ('-'), not ${named.join(" and ")}`);
}

/**
 * The admin policy from --config/--policy/--rules with the syntax of its file, or null when none was given.
 * Unreadable or invalid files stop with 2.
 */
export function loadPolicyFlags(io: CliIo, flags: { config?: string | undefined; policy?: string | undefined; rules?: string | undefined; namespace?: string | undefined }): LoadedPolicy | null {
  if (!flags.config && !flags.policy && !flags.rules) return null;
  const res = loadPolicyFiles({ config: resolveInput(io, flags.config), policy: resolveInput(io, flags.policy), rules: resolveInput(io, flags.rules), namespace: flags.namespace }, buildMcpToolName);
  if (!res.ok) {
    printIssues(io, res.issues);
    throw new CliStop(EXIT.usage);
  }
  printWarnings(io, res.warnings);
  return res.value;
}

/** Load the agent file; a missing or unreadable file is a usage error (2), an invalid blueprint is returned. */
export function loadAgentFlag(io: CliIo, path: string, namespace: string | undefined): { ok: true; agent: LoadedAgent } | { ok: false; issues: LoadIssue[] } {
  const res = loadAgent(resolveInput(io, path), namespace);
  if (res.ok) {
    printWarnings(io, res.warnings);
    return { ok: true, agent: res.value };
  }
  if (res.issues.length === 1 && res.issues[0]?.message.startsWith("cannot read:")) {
    printIssues(io, res.issues);
    throw new CliStop(EXIT.usage);
  }
  return { ok: false, issues: res.issues };
}
