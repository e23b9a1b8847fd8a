// An outcome as an MCP tool result: an allow is the result text (isError when the call ran and failed), a
// refusal is `isError: true` with the upstream message the model must see, never an empty success. What a
// machine needs rides in `_meta` under the sidecar's own keys (src/api/mcp-meta.ts): on an allow the label and
// the taint after it, on a refusal the `/v1` code and the audit's decision source.
import type { CallToolResult } from "@modelcontextprotocol/server";
import { LABEL_META_KEY, REFUSAL_META_KEY, type RefusalMeta } from "../../api/mcp-meta.ts";
import type { CallOutcome } from "../core/call-outcomes.ts";
import type { Level } from "../../policy/levels.ts";

/** What an executed call's result carries in `_meta`. */
type LabelMeta = { label: Level; taint: Level; entry: { region: string; id: string } };

/** A tool result with only a text. */
export function buildTextResult(text: string, isError: boolean, meta?: LabelMeta): CallToolResult {
  return { content: [{ type: "text", text }], isError, ...(meta === undefined ? {} : { _meta: { [LABEL_META_KEY]: meta } }) };
}

/** A refusal: the message as the content, the code (and decision source, when one was recorded) in `_meta`. */
export function buildRefusalResult(message: string, refusal: RefusalMeta): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true, _meta: { [REFUSAL_META_KEY]: refusal } };
}

/** The result of a settled call (allow or deny). */
export function buildCallResult(outcome: Extract<CallOutcome, { kind: "allow" | "deny" }>): CallToolResult {
  if (outcome.kind === "deny") return buildRefusalResult(outcome.body.message, { code: outcome.body.code, ...(outcome.source === undefined ? {} : { source: outcome.source }) });
  const b = outcome.body;
  return buildTextResult(b.result, b.isError, { label: b.label, taint: b.taint, entry: b.entry });
}
