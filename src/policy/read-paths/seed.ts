// The read-path fence on seeds (spec §7, sandbox-and-blueprint §3.6): a `files`, `glob` or `rhai` seed path is
// the workdir joined with the declared path; one whose real path stays inside the workdir is used, one outside
// must be declared and granted (decided on the canonical path), anything else fails the spawn with upstream's
// message. A `blueprint:` path reads only from the blueprint's own files, and no grant lets it out.
import { canonicalizeForMatch, isWithin, joinRequest, tryRealpath } from "./canonicalize.ts";
import { decide } from "./decide.ts";
import type { ResolveContext } from "./resolve.ts";

/** The prefix of a seed path that reads from the blueprint's own files. */
export const BLUEPRINT_SEED_PREFIX = "blueprint:";

/** Where a seed's content came from: it decides the label (a granted read outside the workdir is Private). */
export type SeedOrigin = "workdir" | "granted" | "blueprint";

/** A seed path the fence let through, with the canonical path to open. */
export type SeedPathResolution =
  | { readonly ok: true; readonly origin: SeedOrigin; readonly openPath: string }
  | { readonly ok: false; readonly code: "seed-outside-workdir" | "seed-outside-blueprint"; readonly message: string };

/** Upstream's spawn error for a seed path outside the workdir that no declared-and-granted entry covers. */
export function buildSeedOutsideMessage(region: string, path: string, workdir: string): string {
  return `region '${region}': seed path '${path}' resolves outside the working directory (${workdir}); grant it with [read_paths] in the blueprint and your config, or move it inside`;
}

/**
 * Resolve one workdir-relative seed path (`path` as declared, or a glob match). No lexical fold: `link/..`
 * follows the kernel, as upstream's `seed_path_within` does.
 */
export function resolveSeedPath(region: string, path: string, ctx: ResolveContext): SeedPathResolution {
  const canonical = canonicalizeForMatch(joinRequest(path, ctx.workdir), ctx.fs);
  const realWorkdir = tryRealpath(ctx.fs, ctx.workdir) ?? ctx.workdir;
  if (canonical !== null && isWithin(canonical, realWorkdir)) return { ok: true, origin: "workdir", openPath: canonical };
  if (canonical !== null && ctx.policy !== null && decide(ctx.policy, canonical, ctx.fs) === "Allowed") return { ok: true, origin: "granted", openPath: canonical };
  return { ok: false, code: "seed-outside-workdir", message: buildSeedOutsideMessage(region, path, ctx.workdir) };
}

/**
 * Resolve a `blueprint:` seed path against the blueprint's directory (canonical): its real path must stay inside
 * it. Grants are never consulted, since a blueprint ships no files outside itself.
 */
export function resolveBlueprintSeedPath(region: string, path: string, root: string | undefined, fs: ResolveContext["fs"]): SeedPathResolution {
  const rel = path.slice(BLUEPRINT_SEED_PREFIX.length);
  const refused = (why: string): SeedPathResolution => ({ ok: false, code: "seed-outside-blueprint", message: `region '${region}': seed path '${path}' ${why}; a blueprint: seed reads only files that ship with the blueprint, and no grant widens it` });
  if (root === undefined) return refused("has no blueprint directory to read from");
  if (rel === "" || rel.startsWith("/")) return refused("must name a file relative to the blueprint's directory");
  const canonical = canonicalizeForMatch(joinRequest(rel, root), fs);
  if (canonical === null || !isWithin(canonical, root)) return refused(`resolves outside the blueprint's directory (${root})`);
  return { ok: true, origin: "blueprint", openPath: canonical };
}
