import { realpathSync } from "node:fs";
import { DEFAULT_NAMESPACE } from "../api/constants.ts";
import { EMPTY_POLICY } from "../api/leviath-policy.ts";
import { listToolsOf, listToolSpellings } from "../api/tools.ts";
import { READ_TOOLS } from "../policy/classification.ts";
import {
  buildReadPathPolicy, canonicalizeForMatch, foldLexically, GRANT_ERROR_PREFIX, isWithin, joinRequest, resolveRead, resolveWrite, tryRealpath,
  type PathFs, type PathResolution, type ReadPathPolicy,
} from "../policy/read-paths/index.ts";
import { parseCommandArgs } from "./args.ts";
import { canonicalWorkdir, checkOneStdin, CliStop, homeOf, loadAgentFlag, loadPolicyFlags, printIssues } from "./context.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";

/** `leviath paths --help`. */
export const PATHS_HELP = `Usage: leviath paths test <path> --agent FILE --workdir DIR [options]

Would this agent's read_file (or the named file tool) of this path be allowed, on the real file system, and
why? The same decision code the sidecar runs: the path is folded lexically ('..' above '/' is refused),
resolved through symlinks, and allowed inside the workdir, or outside it only for read tools when a
[read_paths] entry of the blueprint AND a grant of the admin's policy both match the real path.

Options:
      --agent FILE         agent.leviath, a directory holding one, or an Agent (YAML or JSON, a List too)
                           (required)
      --workdir DIR        the run's workdir (required; it must exist)
      --config FILE        the admin's config.toml or a LeviathPolicy (YAML or JSON, a List too) holding the
                           grants (without it, nothing is granted)
      --tool NAME          read_file (default), read_files, list_dir, write_file or edit_file
  -n, --namespace NS       namespace of the agent for per-agent grants (default: ${DEFAULT_NAMESPACE})
      --json               print {decision: "allow"|"deny", code, resolved, open, reason, ...}
  -h, --help               show this help

Files are told apart by content, not by name; '-' reads one of them from stdin. A refusal's advice names the
LeviathPolicy's fields when the grants came from one, config.toml's tables otherwise.
'~' in entries is LEVIATH_HOME when set (even to an empty string), else your home directory; '~' in the
path you test is not expanded (as upstream: it names a directory called '~' in the workdir).
Exit status: 0 allowed, 1 refused, 2 invalid input (a bad entry or grant, an unreadable file, a missing workdir).
`;

const WRITE_TOOLS = listToolSpellings((e) => e.metricClass === "file_write");

/** The real file system, through realpath(3). */
const REAL_FS: PathFs = { realpath: (p) => realpathSync.native(p) };

/**
 * A refusal's advice in the LeviathPolicy's fields: the decision code words it for upstream's config.toml, as the
 * sidecar says it to an agent run from upstream files.
 */
function adviseInPolicyFields(r: PathResolution, request: string, agentKey: string): PathResolution {
  if (r.ok || r.code !== "not-granted") return r;
  const message =
    `path '${request}' matches this agent's read paths, but the LeviathPolicy does not grant it; ` +
    `add it to spec.readPaths.perAgent ${JSON.stringify(agentKey)} (or set spec.readPaths.allowBlueprintReadPaths: true) of the LeviathPolicy`;
  return { ...r, message };
}

/**
 * The exact roots, declared or granted, the path lies under by name that do not exist on this file system: a root
 * that cannot be resolved matches nothing (decide.ts), so a read there is `not-declared` or `not-granted` here
 * although the files say otherwise; in a Run a volume puts the files there.
 */
export function findMissingRoots(policy: ReadPathPolicy | null, path: string | null, fs: PathFs): { declared: string[]; granted: string[] } {
  const under = (set: ReadPathPolicy["declared"] | undefined) =>
    path === null || set === undefined ? [] : set.entries.flatMap((e) => (e.kind === "exact" && e.root.startsWith("/") && isWithin(path, e.root) && tryRealpath(fs, e.root) === null ? [e.raw] : []));
  return { declared: under(policy?.declared), granted: under(policy?.granted) };
}

/** The note that says a refusal comes from roots missing on this machine (in the words of the policy given), or nothing. */
function describeMissingRoots(missing: { declared: string[]; granted: string[] }, inPolicyFields: boolean): string | undefined {
  const roots = [...missing.declared.map((r) => `${r} (declared)`), ...missing.granted.map((r) => `${r} (granted)`)];
  if (roots.length === 0) return undefined;
  const where = inPolicyFields ? "in a Run, the volume of spec.readPaths.volumes of the LeviathPolicy puts the files there" : "where the agent runs, the directory must exist";
  return `${roots.join(", ")} ${roots.length === 1 ? "does" : "do"} not exist on this machine, and a root that cannot be resolved matches nothing: this answer is this machine's (${where})`;
}

/** The answer, as JSON or for a person; a refusal shows the real path that was judged (the admin's "why"). */
function renderAnswer(r: PathResolution, q: { request: string; tool: string; agent: string; workdir: string; json: boolean; policy: ReadPathPolicy | null; inPolicyFields: boolean }): string {
  const folded = r.ok ? null : foldLexically(joinRequest(q.request, q.workdir));
  const judged = folded === null ? null : canonicalizeForMatch(folded, REAL_FS);
  const note = r.ok || (r.code !== "not-declared" && r.code !== "not-granted") ? undefined : describeMissingRoots(findMissingRoots(q.policy, folded, REAL_FS), q.inPolicyFields);
  if (q.json) {
    const base = { request: q.request, tool: q.tool, agent: q.agent, workdir: q.workdir, decision: r.ok ? "allow" : "deny", code: r.code, source: r.decision };
    const out = r.ok ? { ...base, resolved: r.canonicalPath, open: r.openPath } : { ...base, resolved: judged, reason: r.message, ...(note === undefined ? {} : { note }) };
    return `${JSON.stringify(out, null, 2)}\n`;
  }
  if (r.ok) return `allowed: ${q.tool} '${q.request}' (${r.code})\n  opens: ${r.openPath}\n`;
  return `refused: ${q.tool} '${q.request}' (${r.code})\n${judged ? `  real path: ${judged}\n` : ""}  [error] ${r.message}\n${note === undefined ? "" : `  note: ${note}\n`}`;
}

function checkTool(tool: string): void {
  if (!READ_TOOLS.includes(tool) && !WRITE_TOOLS.includes(tool)) {
    throw new UsageError(`--tool '${tool}' is not a file tool (${listToolsOf("file").join(", ")})`);
  }
}

/** Run `leviath paths test`. */
export function runPaths(argv: string[], io: CliIo): number {
  const [sub, ...rest] = argv;
  if (sub === "--help" || sub === "-h") {
    io.stdout(PATHS_HELP);
    return EXIT.ok;
  }
  if (sub !== "test") throw new UsageError(sub === undefined ? "paths needs a subcommand: test" : `unknown paths subcommand '${sub}'`);
  const { values, positionals } = parseCommandArgs(rest, {
    agent: { type: "string" }, workdir: { type: "string" }, config: { type: "string" },
    tool: { type: "string" }, namespace: { type: "string", short: "n" }, json: { type: "boolean" },
  });
  if (values.help) {
    io.stdout(PATHS_HELP);
    return EXIT.ok;
  }
  const [request, ...extra] = positionals;
  if (request === undefined) throw new UsageError("paths test needs the path to test");
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  if (!values.agent) throw new UsageError("--agent FILE is required");
  if (!values.workdir) throw new UsageError("--workdir DIR is required");
  checkOneStdin({ "--agent": values.agent, "--config": values.config });
  const tool = values.tool ?? "read_file";
  checkTool(tool);
  try {
    return testPath(io, { request, tool, agentFile: values.agent, workdir: values.workdir, config: values.config, namespace: values.namespace, json: values.json === true });
  } catch (err) {
    if (err instanceof CliStop) return err.status;
    throw err;
  }
}

/** One `paths test` question, its flags checked. */
interface PathQuery {
  readonly request: string;
  readonly tool: string;
  readonly agentFile: string;
  readonly workdir: string;
  readonly config: string | undefined;
  readonly namespace: string | undefined;
  readonly json: boolean;
}

/** Builds the agent's read-path policy under the admin's and answers the question as the sidecar would. */
function testPath(io: CliIo, q: PathQuery): number {
  const workdir = canonicalWorkdir(io, q.workdir);
  const admin = loadPolicyFlags(io, { config: q.config, namespace: q.namespace });
  const policy = admin?.spec ?? EMPTY_POLICY;
  const loaded = loadAgentFlag(io, q.agentFile, q.namespace);
  if (!loaded.ok) {
    printIssues(io, loaded.issues);
    return EXIT.usage;
  }
  const { agent } = loaded;
  const built = buildReadPathPolicy({
    agentName: agent.name,
    declared: agent.spec.readPaths?.allow ?? [],
    granted: [...policy.readPaths.global, ...(policy.readPaths.perAgent[agent.key] ?? [])],
    allowBlueprintReadPaths: policy.readPaths.allowBlueprintReadPaths,
    workdir,
    home: homeOf(io),
  });
  const inPolicyFields = admin?.format === "yaml";
  if (!built.ok) {
    io.stderr(`error: ${inPolicyFields ? built.error.replace(GRANT_ERROR_PREFIX, "read_paths grant in the LeviathPolicy: ") : built.error}\n`);
    return EXIT.usage;
  }
  const ctx = { workdir, policy: built.value, fs: REAL_FS };
  const answer = READ_TOOLS.includes(q.tool) ? resolveRead(q.request, ctx) : resolveWrite(q.request, ctx);
  const r = inPolicyFields ? adviseInPolicyFields(answer, q.request, agent.key) : answer;
  io.stdout(renderAnswer(r, { request: q.request, tool: q.tool, agent: agent.key, workdir, json: q.json, policy: built.value, inPolicyFields }));
  return r.ok ? EXIT.ok : EXIT.refused;
}
