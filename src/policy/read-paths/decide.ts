// The double check (spec §4.2, §5.4): a real path must match a declared entry AND a granted one
// (or the wholesale override must be on). Exact roots are canonicalized at every match.
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
 * its UTF-8 bytes (RE2 converts a JS string on every `test` of each matcher; bytes are handed over as they are)
 * and the realpath of each exact root (tried in the declared set and again in the granted set). Memoized for one
 * decision only: roots are still canonicalized at every decision, so a root created later starts working.
 */
export class MatchProbe {
  readonly path: string;
  #bytes: Uint8Array | undefined;
  readonly #realRoots = new Map<string, string | null>();
  readonly #fs: PathFs;

  constructor(canonicalPath: string, fs: PathFs) {
    this.path = canonicalPath;
    this.#fs = fs;
  }

  get bytes(): Uint8Array {
    this.#bytes ??= utf8.encode(this.path);
    return this.#bytes;
  }

  realRoot(root: string): string | null {
    let real = this.#realRoots.get(root);
    if (real === undefined) {
      real = tryRealpath(this.#fs, root);
      this.#realRoots.set(root, real);
    }
    return real;
  }
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
  return realRoot !== null && isWithin(probe.path, realRoot);
}

/** Whether any entry of the set matches the probe's path. */
export function isSetMatch(set: ReadPathSet, probe: MatchProbe): boolean {
  return set.entries.some((entry) => isEntryMatch(entry, probe));
}

/** Decide one canonical (symlink-resolved) path: declared first, then granted or overridden. */
export function decide(policy: ReadPathPolicy, canonicalPath: string, fs: PathFs): ReadPathDecision {
  const probe = new MatchProbe(canonicalPath, fs);
  if (!isSetMatch(policy.declared, probe)) return "NotDeclared";
  if (policy.allowBlueprintReadPaths || isSetMatch(policy.granted, probe)) return "Allowed";
  return "NotGranted";
}
