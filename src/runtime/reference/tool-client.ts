// How the runtime reaches its tools: the tools a stage offers and the outcome of one call. Two implementations:
// MCP (the sidecar's /mcp endpoint) and the /v1 API. Both fail closed: a sidecar that does not answer, or answers
// something malformed, is a refusal, and the runtime stops rather than guess.
import type { ToolSpec } from "./providers/types.ts";

/** The outcome of one call, as the model will see it. */
export interface ToolOutcome {
  /** The text given to the model as the tool result. */
  readonly content: string;
  readonly isError: boolean;
  /** How the sidecar decided: `allow` (it ran it), `run` (the runtime ran it), `deny`. */
  readonly decision: "allow" | "run" | "deny";
  /** The refusal's code (`gate-blocked`, `not-granted`, ...), on a deny. */
  readonly code?: string;
  /** The refusal's decision source (`read_path`, `user_denied`, ...), when the sidecar recorded one. */
  readonly source?: string;
  /** The result's label and the context taint after it, when the sidecar said. */
  readonly label?: string;
  readonly taint?: string;
  /** Where the sidecar labelled the result (MCP calls get the sidecar's own id); default the call's id. */
  readonly entry?: { readonly region: string; readonly id: string };
  /** The sidecar did not answer (or not sensibly): nothing ran, and nothing more should be tried. */
  readonly failedClosed?: boolean;
}

/** The runtime's tools. */
export interface ToolClient {
  /** The tools of the current stage. */
  listTools(stage: { readonly name: string; readonly toolNames: readonly string[] | undefined; readonly output: unknown }): Promise<ToolSpec[]>;
  /** One call, waited on until it settles (a prompt included). */
  callTool(id: string, name: string, args: Record<string, unknown>): Promise<ToolOutcome>;
  close(): Promise<void>;
}
