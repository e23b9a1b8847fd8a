// The double check (spec §4.2, §5.4): a real path must match a declared entry AND a granted one
// (or the wholesale override must be on). An exact root is canonicalized at every match, or its last canonical
// form checked to name the same directory as the root does now.
import { isWithin, tryRealpath, type PathFs } from "./canonicalize.ts";
import type { CompiledEntry, ReadPathSet } from "./compile.ts";

/** The core decision, as upstream's `ReadPathDecision`. */
export type ReadPathDecision = "Allowed" | "NotDeclared" | "NotGranted";

/** Everything enforcement needs, resolved once when the agent is built. */
export interface ReadPathPolicy {
  /** The blueprint's name, quoted in `NotGranted` messages and the grant stanza. */
  readonly agentName: string;
  readonly declared: ReadPathSet;
  readonly granted: ReadPathSet;
  /** `allow_blueprint_read_paths`: replaces the grant predicate, never the declared one. */
  readonly allowBlueprintReadPaths: boolean;
}

const utf8 = new TextEncoder();

/**
 * One canonical path being matched against entries, with what a decision would otherwise recompute per entry:
 * its UTF-8 bytes (RE2 converts a JS string on every `test` of each matcher; bytes are handed over as they are),
 * the realpath of each exact root (tried in the declared set and again in the granted set) and the directory
 * identities it compared. Memoized for one decision only.
 */
export class MatchProbe {
  readonly path: string;
  #bytes: Uint8Array | undefined;
  readonly #realRoots = new Map<string, string | null>();
  readonly #directoryIds = new Map<string, string | null>();
  readonly #fs: PathFs;

  constructor(canonicalPath: string, fs: PathFs) {
    this.path = canonicalPath;
    this.#fs = fs;
  }

  get bytes(): Uint8Array {
    this.#bytes ??= utf8.encode(this.path);
    return this.#bytes;
  }

  /** Whether the filesystem port can tell directories apart, so a root's earlier canonical form can be checked. */
  get checksDirectories(): boolean {
    return this.#fs.directoryId !== undefined;
  }

  realRoot(root: string): string | null {
    let real = this.#realRoots.get(root);
    if (real === undefined) {
      real = tryRealpath(this.#fs, root);
      this.#realRoots.set(root, real);
    }
    return real;
  }

  /** Whether both paths name one and the same directory now (links followed). */
  sameDirectory(a: string, b: string): boolean {
    const id = this.#directoryId(a);
    return id !== null && id === this.#directoryId(b);
  }

  #directoryId(path: string): string | null {
    let id = this.#directoryIds.get(path);
    if (id === undefined) {
      id = this.#fs.directoryId?.(path) ?? null;
      this.#directoryIds.set(path, id);
    }
    return id;
  }
}

/**
 * The canonical form each exact root had when it was last canonicalized, by compiled entry. Never trusted as it is:
 * it only names the directory a match may be proved with (`isCheckedRootMatch`), so a root whose link was swapped,
 * or a directory moved, is canonicalized again before anything it no longer covers could match.
 */
const lastRealRoot = new WeakMap<CompiledEntry, string>();

/**
 * A match of an exact root proved without canonicalizing it: the canonical path lies under the root's last
 * canonical form, and the root names the very directory that form names, now. The path being canonical, every
 * prefix of it is a real directory, so that form is still the root's realpath (directories have one parent).
 * Anything short of that proves nothing, and the entry is canonicalized the full way (`isSetMatch`).
 */
function isCheckedRootMatch(entry: CompiledEntry & { kind: "exact" }, probe: MatchProbe): boolean {
  const last = lastRealRoot.get(entry);
  return last !== undefined && isWithin(probe.path, last) && probe.sameDirectory(entry.root, last);
}

/**
 * Whether one entry matches a canonical path. An exact root that cannot be canonicalized matches
 * nothing; a root that is not absolute (a relative or empty home) is never resolved, so it too
 * matches nothing.
 */
export function isEntryMatch(entry: CompiledEntry, probe: MatchProbe): boolean {
  if (entry.kind !== "exact") return entry.matcher.test(probe.bytes);
  if (!entry.root.startsWith("/")) return false;
  const realRoot = probe.realRoot(entry.root);
  if (realRoot !== null) lastRealRoot.set(entry, realRoot);
  return realRoot !== null && isWithin(probe.path, realRoot);
}

/**
 * Whether any entry of the set matches the probe's path. With a port that tells directories apart, a match is
 * looked for first with each exact root's last canonical form, checked (two stat calls for the root that covers
 * the path, none for the others, where realpath(3) costs one call per component of each root tried); when that
 * proves none, every exact root is canonicalized as it is without the port, so a root created, moved or relinked
 * since is seen at this decision.
 */
export function isSetMatch(set: ReadPathSet, probe: MatchProbe): boolean {
  if (!probe.checksDirectories) return set.entries.some((entry) => isEntryMatch(entry, probe));
  if (set.entries.some((entry) => (entry.kind === "exact" ? isCheckedRootMatch(entry, probe) : isEntryMatch(entry, probe)))) return true;
  return set.entries.some((entry) => entry.kind === "exact" && isEntryMatch(entry, probe));
}

/** Decide one canonical (symlink-resolved) path: declared first, then granted or overridden. */
export function decide(policy: ReadPathPolicy, canonicalPath: string, fs: PathFs): ReadPathDecision {
  const probe = new MatchProbe(canonicalPath, fs);
  if (!isSetMatch(policy.declared, probe)) return "NotDeclared";
  if (policy.allowBlueprintReadPaths || isSetMatch(policy.granted, probe)) return "Allowed";
  return "NotGranted";
}
