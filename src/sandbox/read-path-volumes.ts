import type { z } from "zod";
import type { PolicyMountSchema } from "../api/leviath-policy.ts";
import { isPathOverlap } from "../policy/grant-volumes.ts";
import { computeLiteralRoot } from "../policy/read-paths/entry.ts";

/** A policy-declared mount with its volume source. */
export type PolicyMount = z.infer<typeof PolicyMountSchema>;

/**
 * The read-path volumes the sidecar mounts for one run: those a granted entry can reach (the entry's literal
 * root lies inside the volume, or the volume inside it). The sidecar still decides every read; this only keeps
 * volumes no grant touches out of the pod.
 */
export function computeReadPathVolumes(volumes: readonly PolicyMount[], grants: readonly string[]): PolicyMount[] {
  const roots = grants.map(computeLiteralRoot).filter((r): r is string => r !== undefined);
  return volumes.filter((v) => v.volume !== undefined && roots.some((root) => isPathOverlap(root, v.path)));
}
