// Seeds filled by the sidecar, never by the runtime reading files itself (sandbox-and-blueprint §3.6): `files`
// and `glob` seeds are concatenated files, a `rhai` seed is the script's source (the runtime runs it). Every path,
// and each glob match, goes through the read-path fence on its real path (policy/read-paths/seed.ts); a
// `blueprint:` path reads only from the blueprint's directory. One refused path refuses the seed, as upstream's
// spawn does. Files are opened on the checked real path and re-verified (checked-open.ts).
import { closeSync, readdirSync } from "node:fs";
import type { RefusalCode, Seed } from "../../api/sidecar-contract.ts";
import { MAX_READ_FILES } from "../../api/tools.ts";
import { maxLevel, type Level } from "../../policy/levels.ts";
import {
  BLUEPRINT_SEED_PREFIX, compileGlob, joinRequest, resolveBlueprintSeedPath, resolveSeedPath,
  type ResolveContext, type SeedOrigin, type SeedPathResolution,
} from "../../policy/read-paths/index.ts";
import { openCheckedForRead, readDescriptor } from "./checked-open.ts";
import { MAX_READ_FILES_TOTAL_BYTES } from "./file-tools.ts";


/** Most entries a glob seed's walk visits, and how deep it goes. */
const MAX_GLOB_VISITS = 10_000;
const MAX_GLOB_DEPTH = 32;
const GLOB_META = /[*?[{]/;

/** What filling a seed needs: the fence, the blueprint's directory (the --agent directory, or --blueprint-dir in a cluster), and the label a workdir read gets. */
export interface SeedContext {
  readonly resolve: ResolveContext;
  readonly blueprintRoot: string | undefined;
  readonly workdirLabel: Level;
}

/** One file a seed read. */
export interface SeedSource {
  readonly path: string;
  readonly origin: SeedOrigin;
}

/** A filled seed, or why it was refused. */
export type SeedOutcome =
  | { readonly ok: true; readonly content: string; readonly sources: readonly SeedSource[]; readonly label: Level }
  | { readonly ok: false; readonly code: RefusalCode; readonly message: string };

function resolvePath(region: string, path: string, ctx: SeedContext): SeedPathResolution {
  return path.startsWith(BLUEPRINT_SEED_PREFIX)
    ? resolveBlueprintSeedPath(region, path, ctx.blueprintRoot, ctx.resolve.fs)
    : resolveSeedPath(region, path, ctx.resolve);
}

/**
 * The paths a glob seed matches, sorted: the pattern joined to its base (the workdir, or the blueprint's directory),
 * walked from its literal directory. Symlinks are matched but never descended into: each match is then checked on
 * its real path, so a link cannot carry the walk, or the read, out of the fence.
 */
function expandGlob(pattern: string, base: string): { ok: true; paths: string[] } | { ok: false; message: string } {
  const joined = joinRequest(pattern, base);
  const compiled = compileGlob(joined);
  if (!compiled.ok) return { ok: false, message: `glob '${pattern}': ${compiled.error}` };
  const parts = joined.split("/");
  const literal = parts.slice(0, Math.max(1, parts.findIndex((p) => GLOB_META.test(p)))).join("/") || "/";
  const out: string[] = [];
  let visits = 0;
  const walk = (dir: string, depth: number): void => {
    if (depth > MAX_GLOB_DEPTH) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (++visits > MAX_GLOB_VISITS) return;
      const path = dir === "/" ? `/${e.name}` : `${dir}/${e.name}`;
      if (compiled.value.test(path) && !e.isDirectory()) out.push(path);
      if (e.isDirectory()) walk(path, depth + 1);
    }
  };
  walk(literal, 0);
  return { ok: true, paths: out.sort() };
}

function labelOf(origin: SeedOrigin, ctx: SeedContext): Level {
  // A granted read outside the workdir is Private, as for read_file; the blueprint's own text is its author's.
  return origin === "granted" ? "private" : origin === "blueprint" ? "public" : ctx.workdirLabel;
}

function readSeedFile(path: string, remaining: number): { ok: true; text: string } | { ok: false; message: string } {
  const opened = openCheckedForRead(path, false);
  if (!opened.ok) return { ok: false, message: opened.reason === "os" ? `cannot open '${path}': ${(opened.error as NodeJS.ErrnoException).code ?? String(opened.error)}` : `'${path}' changed while it was opened` };
  try {
    const read = readDescriptor(opened.fd, remaining);
    if (!read.ok) return { ok: false, message: read.reason === "too-large" ? `seed files exceed ${MAX_READ_FILES_TOTAL_BYTES} bytes in total` : `cannot read '${path}': ${read.reason}` };
    return { ok: true, text: read.data.toString("utf8") };
  } finally {
    closeSync(opened.fd);
  }
}

/** Fill one region's seed; the first refused path refuses the whole seed with upstream's spawn message. */
export function fillSeed(region: string, seed: Seed, ctx: SeedContext): SeedOutcome {
  let paths: string[];
  if ("glob" in seed) {
    const blueprint = seed.glob.startsWith(BLUEPRINT_SEED_PREFIX);
    const base = blueprint ? ctx.blueprintRoot : ctx.resolve.workdir;
    if (base === undefined) {
      const refused = resolveBlueprintSeedPath(region, seed.glob, undefined, ctx.resolve.fs) as Extract<SeedPathResolution, { ok: false }>;
      return { ok: false, code: refused.code, message: refused.message };
    }
    const expanded = expandGlob(blueprint ? seed.glob.slice(BLUEPRINT_SEED_PREFIX.length) : seed.glob, base);
    if (!expanded.ok) return { ok: false, code: "invalid-seed", message: `region '${region}': ${expanded.message}` };
    paths = expanded.paths.slice(0, MAX_READ_FILES).map((p) => (blueprint ? `${BLUEPRINT_SEED_PREFIX}${p.slice(base.length + 1)}` : p));
  } else {
    paths = "files" in seed ? seed.files : [seed.rhai];
  }
  const resolved: { path: string; openPath: string; origin: SeedOrigin }[] = [];
  for (const path of paths) {
    const r = resolvePath(region, path, ctx);
    if (!r.ok) return { ok: false, code: r.code, message: r.message };
    resolved.push({ path, openPath: r.openPath, origin: r.origin });
  }
  let content = "";
  let label: Level = "public";
  for (const r of resolved) {
    const read = readSeedFile(r.openPath, MAX_READ_FILES_TOTAL_BYTES - Buffer.byteLength(content));
    if (!read.ok) return { ok: false, code: "seed-unreadable", message: `region '${region}': ${read.message}` };
    content += read.text;
    label = maxLevel(label, labelOf(r.origin, ctx));
  }
  return { ok: true, content, sources: resolved.map((r) => ({ path: r.path, origin: r.origin })), label };
}
