// Regions filled at spawn, before the entry stage's model loop, as upstream's spawn does (sandbox-and-blueprint
// §3.6): the blueprint's `[context.regions.<name>]` with a table seed. The runtime never reads a file or runs a
// command itself: `files`, `glob`, `rhai` and `command` seeds go to the sidecar's `POST /v1/seeds`, which fences
// the paths, decides the command, audits the resolution and labels the region's entry. A path the fence refuses
// fails the spawn with upstream's message (exit 3); any other seed failure fails it only for a `required` region.
import type { AgentSpec } from "../../api/agent.ts";
import type { RefusalCode } from "../../api/sidecar-contract.ts";

/** The seed forms the sidecar fills. */
export const SIDECAR_SEED_FORMS = ["files", "glob", "rhai", "command"] as const;
/** Refusal codes of the read-path fence: a spawn error whether or not the region is required (upstream's `seed_path_within`). */
export const FENCE_CODES: ReadonlySet<string> = new Set<RefusalCode>(["seed-outside-workdir", "seed-outside-blueprint"]);

/** One region to fill at spawn. */
export interface RegionSeedPlan {
  readonly name: string;
  /** What the sidecar fills (`literal` is the blueprint's own text and is labelled as input). */
  readonly seed: { files: string[] } | { glob: string } | { rhai: string } | { command: string } | { literal: string };
  readonly required: boolean;
  readonly requiredMessage: string | undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function parseSeed(raw: Record<string, unknown>, where: string, warnings: string[]): RegionSeedPlan["seed"] | undefined {
  // Upstream: the first key present wins, in this order.
  if (typeof raw["glob"] === "string") return { glob: raw["glob"] };
  if (Array.isArray(raw["files"]) && raw["files"].every((f) => typeof f === "string")) return { files: raw["files"] as string[] };
  if (typeof raw["literal"] === "string") return { literal: raw["literal"] };
  if (typeof raw["rhai"] === "string") return { rhai: raw["rhai"] };
  if (typeof raw["command"] === "string") return { command: raw["command"] };
  warnings.push(`${where}: ${Object.keys(raw).join(", ") || "an empty table"} is not a seed leviath agent fills (filled: glob, files, literal, rhai, command); region left empty`);
  return undefined;
}

/**
 * The regions of `spec.blueprint.context.regions` (upstream's `[context.regions.<name>]`, in declaration order) that
 * have a table seed. String seeds (`task`, `input`, a caller input) are the task message's; stage-level regions are
 * not filled (reported by the stage plan as ignored).
 */
export function buildRegionSeedPlans(spec: AgentSpec, warnings: string[]): RegionSeedPlan[] {
  const context = spec.blueprint?.["context"];
  const regions = isRecord(context) ? context["regions"] : undefined;
  if (!isRecord(regions)) return [];
  const out: RegionSeedPlan[] = [];
  for (const [name, def] of Object.entries(regions)) {
    if (!isRecord(def) || !isRecord(def["seed"])) continue;
    const where = `blueprint.context.regions.${name}.seed`;
    const seed = parseSeed(def["seed"], where, warnings);
    if (seed === undefined) continue;
    if ("rhai" in seed) warnings.push(`${where}: the script's path is fenced by the sidecar, but leviath agent does not run Rhai; region left empty`);
    out.push({ name, seed, required: def["required"] === true, requiredMessage: typeof def["required_message"] === "string" ? def["required_message"] : undefined });
  }
  return out;
}
