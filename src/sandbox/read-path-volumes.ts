import type { z } from "zod";
import type { PolicyMountSchema } from "../api/policy.ts";

/** A policy-declared mount with its volume source. */
export type PolicyMount = z.infer<typeof PolicyMountSchema>;

const GLOB_META = "*?[{";
const REGEX_META = "\\.^$|?*+()[]{}";

/** The literal directory an entry starts with (`/data/x` for `glob:/data/x/**`), or undefined for home-relative or relative entries. */
export function computeLiteralRoot(entry: string): string | undefined {
  let text = entry;
  let meta = "";
  if (entry.startsWith("regex:")) [text, meta] = [entry.slice(6), REGEX_META];
  else if (entry.startsWith("glob:")) [text, meta] = [entry.slice(5), GLOB_META];
  if (!text.startsWith("/")) return undefined;
  let end = text.length;
  for (let i = 0; i < text.length; i++) {
    if (meta.includes(text[i]!)) {
      end = text.lastIndexOf("/", i);
      break;
    }
  }
  const root = text.slice(0, Math.max(end, 1)).replace(/\/+$/, "");
  return root === "" ? "/" : root;
}

function within(path: string, dir: string): boolean {
  return dir === "/" || path === dir || path.startsWith(`${dir}/`);
}

/**
 * The read-path volumes the sidecar mounts for one run: those a granted entry can reach (the entry's literal
 * root lies inside the volume, or the volume inside it). The sidecar still decides every read; this only keeps
 * volumes no grant touches out of the pod.
 */
export function computeReadPathVolumes(volumes: readonly PolicyMount[], grants: readonly string[]): PolicyMount[] {
  const roots = grants.map(computeLiteralRoot).filter((r): r is string => r !== undefined);
  return volumes.filter((v) => v.volume !== undefined && roots.some((root) => within(root, v.path) || within(v.path, root)));
}
