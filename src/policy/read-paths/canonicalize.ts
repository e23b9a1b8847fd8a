// Path arithmetic for read-path checks: the lexical fold of a request, component-wise containment,
// and canonicalization with walk-up (spec §5.2, §5.5). The filesystem is reached only through the
// injected `PathFs` port.

/** The filesystem operations the policy needs. `realpath` throws on any failure; callers pass `fs.realpathSync.native`. */
export interface PathFs {
  realpath(path: string): string;
  /**
   * The identity (device and inode) of the directory `path` names once every link is followed, as one string;
   * `null` when it names no directory or cannot be read. Optional: without it every exact root is canonicalized
   * at each decision (decide.ts).
   */
  directoryId?(path: string): string | null;
}

/** realpath, with every failure (ENOENT, ENOTDIR, ELOOP, EACCES, …) as `null`. */
export function tryRealpath(fs: PathFs, path: string): string | null {
  try {
    return fs.realpath(path);
  } catch {
    return null;
  }
}

/**
 * Canonicalize a path that may not exist: realpath the deepest ancestor that resolves, then re-append
 * the unresolved tail. `null` when nothing resolves. Relative paths are never resolved (they would
 * resolve against the process's directory, which is nobody's policy).
 */
export function canonicalizeForMatch(path: string, fs: PathFs): string | null {
  if (!path.startsWith("/")) return null;
  const parts = path.split("/").filter((part) => part !== "" && part !== ".");
  const tail: string[] = [];
  for (;;) {
    const real = tryRealpath(fs, `/${parts.join("/")}`);
    if (real !== null) return appendComponents(real, tail);
    const name = parts.pop();
    // `/` itself failed, or the last component is `..` (which has no name to set aside).
    if (name === undefined || name === "..") return null;
    tail.unshift(name);
  }
}

function appendComponents(base: string, tail: readonly string[]): string {
  if (tail.length === 0) return base;
  return base.endsWith("/") ? base + tail.join("/") : `${base}/${tail.join("/")}`;
}

/**
 * Fold `.`, `..` and repeated or trailing `/` out of an absolute path by components. A `..` above
 * `/` is an error (`null`), never clamped as `path.resolve` would.
 */
export function foldLexically(path: string): string | null {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length === 0) return null;
      out.pop();
    } else {
      out.push(part);
    }
  }
  return `/${out.join("/")}`;
}

/** A request as a path: absolute requests are used as is, anything else (even `~/x`) joins the workdir. */
export function joinRequest(request: string, workdir: string): string {
  if (request.startsWith("/")) return request;
  if (request === "") return workdir;
  return workdir.endsWith("/") ? workdir + request : `${workdir}/${request}`;
}

/**
 * Whether `path` is `root` or lies under it, by whole components (`/data/run` does not contain
 * `/data/runs`). Both must be normalized absolute paths (no `.`/`..`, no trailing `/` except `/`).
 */
export function isWithin(path: string, root: string): boolean {
  if (root === "/") return path.startsWith("/");
  return path === root || path.startsWith(`${root}/`);
}
