// The `tools/call` requests of an MCP POST body whose params the SDK's schema will refuse (a tool name that is not a
// string, arguments that are not an object): the SDK answers those with a JSON-RPC error before any handler runs,
// so the endpoint finds them first and has the core refuse each as a call, recorded and counted like every other.
import { z } from "zod";
import { formatZodIssue } from "../../api/sidecar-contract.ts";

/** What the SDK requires of `tools/call` params (the parts it checks before a handler runs). */
const CallParamsSchema = z.object({
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()).optional(),
});

/** One malformed `tools/call`: the tool as sent and why it does not parse. */
export interface MalformedToolCall {
  readonly tool: unknown;
  readonly detail: string;
}

/** The malformed `tools/call` requests of a JSON-RPC body (one message or a batch). */
export function findMalformedToolCalls(body: unknown): MalformedToolCall[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) => {
    if (typeof m !== "object" || m === null || (m as { method?: unknown }).method !== "tools/call") return [];
    const params = (m as { params?: unknown }).params;
    const parsed = CallParamsSchema.safeParse(params);
    if (parsed.success) return [];
    const tool = typeof params === "object" && params !== null ? (params as { name?: unknown }).name : undefined;
    return [{ tool, detail: formatZodIssue(parsed.error).replace(/^body:/, "params:") }];
  });
}
