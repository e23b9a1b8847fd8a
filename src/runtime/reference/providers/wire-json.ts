// Parsing what a provider sent: JSON that is not JSON, or tool arguments that are not an object, fail naming it.
import { ProviderError } from "./types.ts";

/** JSON text, or a ProviderError saying what was not JSON. */
export function parseProviderJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError(`${what}: not JSON`);
  }
}

/** A tool call's arguments: a JSON object (the sidecar and MCP both take objects), else a ProviderError. */
export function asToolArgs(value: unknown, provider: string, tool: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ProviderError(`${provider} tool call '${tool}': arguments are not an object`);
  return value as Record<string, unknown>;
}
