// Request resolution for the file tools (spec §5.1–5.3, §5.6). Read tools may fall back to the
// read-path policy when the workdir refuses; write tools never do.
import { canonicalizeForMatch, foldLexically, isWithin, joinRequest, tryRealpath, type PathFs } from "./canonicalize.ts";
import { decide, type ReadPathPolicy } from "./decide.ts";

/** What a resolver needs: the canonical workdir, the policy (null = nothing declared), the port. */
export interface ResolveContext {
  /** The run's workdir, canonicalized by the caller; must be absolute. */
  readonly workdir: string;
  readonly policy: ReadPathPolicy | null;
  readonly fs: PathFs;
}

/** A resolution that lets the tool proceed, with the exact path it must open. */
export type ResolvedPath =
  | { readonly ok: true; readonly decision: "inside_workdir"; readonly code: "inside-workdir"; readonly openPath: string; readonly canonicalPath: string }
  | { readonly ok: true; readonly decision: "Allowed"; readonly code: "allowed"; readonly openPath: string; readonly canonicalPath: string }
  // `nul` is served as the null device too: upstream would open a file named `nul` in its own cwd.
  | { readonly ok: true; readonly decision: "null_device"; readonly code: "null-device"; readonly openPath: "/dev/null"; readonly canonicalPath: null };

/** Why a workdir resolution failed; these are the only codes of `WorkdirRefusal`. */
export type WorkdirRefusalCode = "outside-workdir" | "escapes-workdir" | "symlink-escape" | "workspace-missing";

/** A refusal, with the upstream message (quoting the request as typed) and a stable code. */
export type RefusedPath =
  | { readonly ok: false; readonly decision: "NotDeclared"; readonly code: "not-declared"; readonly message: string }
  | { readonly ok: false; readonly decision: "NotGranted"; readonly code: "not-granted"; readonly message: string }
  | { readonly ok: false; readonly decision: "WorkdirRefusal"; readonly code: WorkdirRefusalCode; readonly message: string }
  | { readonly ok: false; readonly decision: "Unresolvable"; readonly code: "unresolvable"; readonly message: string }
  | { readonly ok: false; readonly decision: "Unverifiable"; readonly code: "unverifiable"; readonly message: string };

/** The outcome of resolving one tool path. */
export type PathResolution = ResolvedPath | RefusedPath;

/** All decision values, as the acceptance vectors name them. */
export type ResolutionDecision = PathResolution["decision"];
/** All stable machine codes. */
export type ResolutionCode = PathResolution["code"];

const NULL_DEVICE: ResolvedPath = { ok: true, decision: "null_device", code: "null-device", openPath: "/dev/null", canonicalPath: null };

function isNullDevice(request: string): boolean {
  if (request === "/dev/null") return true;
  // ASCII-only case folding, as Rust's `eq_ignore_ascii_case`.
  return request.length === 3 && request.replace(/[A-Z]/g, (ch) => ch.toLowerCase()) === "nul";
}

function workdirRefusal(code: WorkdirRefusalCode, message: string): RefusedPath {
  return { ok: false, decision: "WorkdirRefusal", code, message };
}

/** Workdir containment (spec §5.2): lexical first, then real (symlink-resolved). */
function resolveInsideWorkdir(request: string, workdir: string, fs: PathFs): PathResolution {
  const folded = foldLexically(joinRequest(request, workdir));
  if (folded === null) return workdirRefusal("escapes-workdir", `path '${request}' escapes the working directory`);
  if (!isWithin(folded, workdir)) {
    return workdirRefusal(
      "outside-workdir",
      `path '${request}' would escape the working directory (${workdir}). Use a path inside the workspace instead - a relative path resolves against it.`,
    );
  }
  const realWorkdir = tryRealpath(fs, workdir) ?? workdir;
  const canonical = canonicalizeForMatch(folded, fs);
  if (canonical === null || !isWithin(canonical, realWorkdir)) {
    return workdirRefusal("symlink-escape", `path '${request}' resolves outside the working directory through a symlink`);
  }
  // The lexical path is opened: the kernel follows only symlinks just verified to stay inside.
  return { ok: true, decision: "inside_workdir", code: "inside-workdir", openPath: folded, canonicalPath: canonical };
}

/** The read-path fallback (spec §5.3), for read tools with an active policy only. */
function resolveThroughPolicy(request: string, workdir: string, policy: ReadPathPolicy, fs: PathFs): PathResolution {
  const folded = foldLexically(joinRequest(request, workdir));
  if (folded === null) return { ok: false, decision: "Unresolvable", code: "unresolvable", message: `path '${request}' cannot be resolved` };
  const canonical = canonicalizeForMatch(folded, fs);
  if (canonical === null) {
    return { ok: false, decision: "Unverifiable", code: "unverifiable", message: `path '${request}' cannot be verified against [read_paths]` };
  }
  switch (decide(policy, canonical, fs)) {
    case "Allowed":
      // The canonical path is opened: what was vetted is what gets read.
      return { ok: true, decision: "Allowed", code: "allowed", openPath: canonical, canonicalPath: canonical };
    case "NotDeclared":
      return {
        ok: false,
        decision: "NotDeclared",
        code: "not-declared",
        message: `path '${request}' is outside the working directory and not in this agent's [read_paths]`,
      };
    case "NotGranted":
      return {
        ok: false,
        decision: "NotGranted",
        code: "not-granted",
        message:
          `path '${request}' matches this agent's [read_paths], but your config does not grant it; ` +
          `add it under [agent_read_paths.${policy.agentName}] (or set allow_blueprint_read_paths = true under [security]) in your config.toml`,
      };
  }
}

/** The workdir as compared against folded requests; a relative one is a caller bug. */
function normalizedWorkdir(workdir: string): string {
  const folded = workdir.startsWith("/") ? foldLexically(workdir) : null;
  if (folded === null) throw new Error(`read-path resolution needs an absolute, canonical workdir, got '${workdir}'`);
  return folded;
}

/** Resolve a path for `read_file`, each element of `read_files`, or `list_dir`. */
export function resolveRead(request: string, ctx: ResolveContext): PathResolution {
  const workdir = normalizedWorkdir(ctx.workdir);
  if (isNullDevice(request)) return NULL_DEVICE;
  const inside = resolveInsideWorkdir(request, workdir, ctx.fs);
  // An inactive policy is never consulted: the plain workdir error stands.
  if (inside.ok || ctx.policy === null) return inside;
  return resolveThroughPolicy(request, workdir, ctx.policy, ctx.fs);
}

/** Resolve a path for `write_file` or `edit_file`: the workspace must exist, and there is no fallback. */
export function resolveWrite(request: string, ctx: ResolveContext): PathResolution {
  const workdir = normalizedWorkdir(ctx.workdir);
  // realpath of `<dir>/.` fails unless the workdir exists and is a directory.
  if (tryRealpath(ctx.fs, `${workdir === "/" ? "" : workdir}/.`) === null) {
    return workdirRefusal("workspace-missing", `workspace '${ctx.workdir}' is no longer accessible`);
  }
  if (isNullDevice(request)) return NULL_DEVICE;
  return resolveInsideWorkdir(request, workdir, ctx.fs);
}
