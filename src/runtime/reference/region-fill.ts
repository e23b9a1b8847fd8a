// Fills the spawn-time regions (region-seeds.ts) through the sidecar, in declaration order, each into the
// conversation as its own entry (`<region>`/`seed:<region>`) that the sidecar labelled. The model sees the region
// before its first turn; a `clear` transition keeps it, like the task.
import type { Conversation } from "./conversation.ts";
import { FENCE_CODES, type RegionSeedPlan } from "./region-seeds.ts";
import type { SidecarClient } from "../sidecar-client.ts";
import type { Transcript } from "./transcript.ts";

/** The spawn went on (with the regions filled), or it failed with upstream's message. */
export type RegionFill = { readonly ok: true; readonly regions: readonly string[] } | { readonly ok: false; readonly message: string };

/** The entry a region's content lands in. */
export const seedEntry = (region: string) => ({ region, id: `seed:${region}` });

/** The text the model reads for a filled region. */
export function buildRegionMessage(region: string, content: string): string {
  return `Region '${region}':\n${content}`;
}

/** Fills every region; a fence refusal, or any failure of a required region, fails the spawn. */
export async function fillRegions(regions: readonly RegionSeedPlan[], deps: { link: SidecarClient; conversation: Conversation; transcript: Transcript }): Promise<RegionFill> {
  const filled: string[] = [];
  for (const r of regions) {
    const entry = seedEntry(r.name);
    let content: string;
    if ("literal" in r.seed) {
      // The blueprint's own text: labelled as input (public), never read from anywhere.
      content = r.seed.literal;
      await deps.link.label([{ ...entry, source: "input" }]);
    } else {
      const answer = await deps.link.seed(r.name, r.seed, entry);
      if (!answer.ok) {
        deps.transcript.line(`[run] region '${r.name}': seed refused (${answer.code}): ${answer.message}`);
        if (FENCE_CODES.has(answer.code)) return { ok: false, message: answer.message };
        if (r.required) return { ok: false, message: r.requiredMessage ?? `required region '${r.name}' could not be filled: ${answer.message}` };
        continue;
      }
      if ("rhai" in r.seed) continue;
      content = answer.content;
      deps.transcript.line(`[run] region '${r.name}' filled: ${Buffer.byteLength(content)} bytes, label ${answer.label}, context taint ${answer.taint}`);
    }
    if (content === "" && r.required) return { ok: false, message: r.requiredMessage ?? `required region '${r.name}' is empty` };
    deps.conversation.addUser(buildRegionMessage(r.name, content), entry);
    filled.push(r.name);
  }
  return { ok: true, regions: filled };
}
