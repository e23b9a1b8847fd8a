// Read-path grants and the volumes behind them. In a cluster the sidecar reads only what a volume mounts
// (`spec.readPaths.volumes` of the LeviathPolicy, mounted at its path in the sidecar alone) and the Run's
// workspace: a grant whose path no volume reaches opens nothing, while the Agent's counts call it granted. The
// `read-path-grant-unbacked` finding names that grant, on the LeviathPolicy and on each Agent whose declared path
// it would open. Pure.
import { FINDING_CODE, type Finding } from "../api/findings.ts";
import type { LeviathPolicySpec } from "../api/leviath-policy.ts";
import { WORKSPACE_ROOT } from "../api/run.ts";
import { computeLiteralRoot } from "./read-paths/index.ts";

/** Whether `path` is `dir` or lies under it (`/` holds every path). */
export function isPathWithin(path: string, dir: string): boolean {
  return dir === "/" || path === dir || path.startsWith(`${dir}/`);
}

/** Whether two paths overlap: one lies within the other. */
export function isPathOverlap(a: string, b: string): boolean {
  return isPathWithin(a, b) || isPathWithin(b, a);
}

/** One grant as the LeviathPolicy writes it: its text and the field that holds it. */
export interface PlacedGrant {
  raw: string;
  field: string;
}

type ReadPaths = Pick<LeviathPolicySpec["readPaths"], "global" | "perAgent" | "volumes">;

/** Every grant of the policy, or (with `key`) those that apply to one Agent, each with its field. */
export function listPlacedGrants(readPaths: ReadPaths, key?: string): PlacedGrant[] {
  const out = readPaths.global.map((raw, i) => ({ raw, field: `spec.readPaths.global[${i}]` }));
  for (const [agent, grants] of Object.entries(readPaths.perAgent)) {
    if (key === undefined || agent === key) out.push(...grants.map((raw, i) => ({ raw, field: `spec.readPaths.perAgent["${agent}"][${i}]` })));
  }
  return out;
}

/** Whether a volume of the policy (one with a source) reaches the grant's literal root; a relative or workspace grant needs none. */
function isBacked(raw: string, volumes: ReadPaths["volumes"]): boolean {
  const root = computeLiteralRoot(raw);
  if (root === undefined || isPathWithin(root, WORKSPACE_ROOT)) return true;
  return (volumes ?? []).some((v) => v.volume !== undefined && isPathOverlap(root, v.path));
}

/**
 * The `read-path-grant-unbacked` findings of `grants` (advice in LeviathPolicy fields: only a cluster mounts
 * volumes). `declared`, when given, keeps the grants that reach one of these declared paths (an Agent's view).
 */
export function computeUnbackedGrantFindings(grants: readonly PlacedGrant[], readPaths: ReadPaths, declared?: readonly string[]): Finding[] {
  const roots = declared?.map(computeLiteralRoot).filter((r): r is string => r !== undefined);
  return grants.flatMap((g): Finding[] => {
    if (isBacked(g.raw, readPaths.volumes)) return [];
    const root = computeLiteralRoot(g.raw)!;
    if (roots !== undefined && !roots.some((r) => isPathOverlap(r, root))) return [];
    return [{
      severity: "warning", code: FINDING_CODE.readPathGrantUnbacked,
      message: `${g.field} of the LeviathPolicy grants '${g.raw}', but no entry of spec.readPaths.volumes mounts anything at ${root}: in a cluster the sidecar reads only what a volume mounts, so the grant opens nothing`,
      fix: `add to spec.readPaths.volumes of the LeviathPolicy: - {path: ${root}, volume: {configMap: {name: <name>}}} (or a persistentVolumeClaim)`,
    }];
  });
}
