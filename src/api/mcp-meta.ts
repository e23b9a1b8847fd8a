// The sidecar's keys in an MCP tool result's `_meta` (namespaced under `leviath.dev/`, as MCP asks of
// implementation-specific metadata), shared by the sidecar that writes them and the runtime that reads them.
import { z } from "zod";

/** The `_meta` key of the sidecar's labelling of an executed call: `{label, taint, entry}`. */
export const LABEL_META_KEY = "leviath.dev/label";

/** The `_meta` key of a refusal: `{code, source}`, the same code `/v1` answers and the audit's decision source. */
export const REFUSAL_META_KEY = "leviath.dev/refusal";

/** What a refusal carries in `_meta` (the message stays the result's text content). */
export const RefusalMetaSchema = z.object({
  code: z.string().min(1),
  source: z.string().min(1).optional(),
});
/** A refusal's `_meta` entry. */
export type RefusalMeta = z.infer<typeof RefusalMetaSchema>;
