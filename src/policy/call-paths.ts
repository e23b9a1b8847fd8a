// The read-path step of a tool call's decision: the paths the call names, each resolved (read tools through the
// read-path fallback, write tools inside the workdir only), and whether the call as a whole is refused. The
// filesystem comes in through the context's PathFs, so this stays pure; the sidecar opens the real path judged here.
import { buildRefusalMessage } from "../api/sidecar-contract.ts";
import { resolveRead, resolveWrite, type PathResolution, type RefusedPath, type ResolveContext } from "./read-paths/index.ts";

/** The paths one call names, and how they are resolved. */
export interface CallPaths {
  /** As the call gives them, in order. */
  readonly requests: readonly string[];
  /** `write`: inside the workdir only (`write_file`, `edit_file`); `read`: the workdir, then the read-path policy. */
  readonly access: "read" | "write";
  readonly context: ResolveContext;
}

/** One requested path and its resolution. */
export interface PathCheck {
  readonly request: string;
  readonly resolution: PathResolution;
}

/** The refusal codes of the read-path step (each a row of the refusal table). */
export type PathRefusalCode = RefusedPath["code"];

/** A refusal of the whole call by its paths: the code, and the row's message (upstream's `[error] <message>`). */
export interface PathRefusal {
  readonly code: PathRefusalCode;
  readonly message: string;
}

/** Resolves every path of a call. */
export function resolveCallPaths(paths: CallPaths): PathCheck[] {
  const resolve = paths.access === "write" ? resolveWrite : resolveRead;
  return paths.requests.map((request) => ({ request, resolution: resolve(request, paths.context) }));
}

/** The refusal of one refused path, with its row's message. */
export function buildPathRefusal(refused: RefusedPath): PathRefusal {
  return { code: refused.code, message: buildRefusalMessage(refused.code, refused.message) };
}

/**
 * The refusal of the whole call: its one path refused, or every path when it names several (`read_files` reads
 * the paths it may and reports the others in its result); undefined when the call goes on.
 */
export function findPathRefusal(checks: readonly PathCheck[]): PathRefusal | undefined {
  const refused = checks.map((c) => c.resolution).filter((r): r is RefusedPath => !r.ok);
  if (refused.length === 0 || refused.length < checks.length) return undefined;
  return buildPathRefusal(refused[0]!);
}
