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

/**
 * Whether one entry matches a canonical path. An exact root that cannot be canonicalized matches
 * nothing; a root that is not absolute (a relative or empty home) is never resolved, so it too
 * matches nothing.
 */
export function isEntryMatch(entry: CompiledEntry, canonicalPath: string, fs: PathFs): boolean {
  if (entry.kind !== "exact") return entry.matcher.test(canonicalPath);
  if (!entry.root.startsWith("/")) return false;
  const realRoot = tryRealpath(fs, entry.root);
  return realRoot !== null && isWithin(canonicalPath, realRoot);
}

/** Whether any entry of the set matches a canonical path. */
export function isSetMatch(set: ReadPathSet, canonicalPath: string, fs: PathFs): boolean {
  return set.entries.some((entry) => isEntryMatch(entry, canonicalPath, fs));
}

/** Decide one canonical (symlink-resolved) path: declared first, then granted or overridden. */
export function decide(policy: ReadPathPolicy, canonicalPath: string, fs: PathFs): ReadPathDecision {
  if (!isSetMatch(policy.declared, canonicalPath, fs)) return "NotDeclared";
  if (policy.allowBlueprintReadPaths || isSetMatch(policy.granted, canonicalPath, fs)) return "Allowed";
  return "NotGranted";
}
