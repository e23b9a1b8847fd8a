// An outcome as an MCP tool result: an allow is the result text (isError when the call ran and failed), a
// refusal is `isError: true` with the upstream message the model must see, never an empty success. The
// sidecar's label and the taint after it ride along in `_meta`, under the sidecar's own key.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { CallOutcome } from "../core/call-outcomes.ts";
import type { Level } from "../../policy/levels.ts";

/** The `_meta` key of the sidecar's labelling. */
export const LABEL_META_KEY = "leviath.dev/label";

/** A tool result with only a text. */
export function buildTextResult(text: string, isError: boolean, meta?: { label: Level; taint: Level; entry: { region: string; id: string } }): CallToolResult {
  return { content: [{ type: "text", text }], isError, ...(meta === undefined ? {} : { _meta: { [LABEL_META_KEY]: meta } }) };
}

/** The result of a settled call (allow or deny). */
export function buildCallResult(outcome: Extract<CallOutcome, { kind: "allow" | "deny" }>): CallToolResult {
  if (outcome.kind === "deny") return buildTextResult(outcome.body.message, true);
  const b = outcome.body;
  return buildTextResult(b.result, b.isError, { label: b.label, taint: b.taint, entry: b.entry });
}
