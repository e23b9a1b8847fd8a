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

/**
 * The `_meta` key of a call answered without having run because it waits on a prompt (over `/mcp`, issue 43):
 * `{approval, call, tool, kind, expiresAt?}`. The approval id is the one an Approval names in `spec.approvalId`.
 */
export const PENDING_META_KEY = "leviath.dev/pending";

/** A pending answer's `_meta` entry. */
export const PendingMetaSchema = z.object({
  approval: z.string().min(1),
  call: z.string().min(1),
  tool: z.string(),
  kind: z.enum(["taint_gate", "tool_approval"]),
  expiresAt: z.string().optional(),
});
/** A pending answer's `_meta` entry. */
export type PendingMeta = z.infer<typeof PendingMetaSchema>;
