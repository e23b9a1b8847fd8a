// What the core needs from the MCP gateway (gateway/): which `<server>__<tool>` names it serves, and a call
// to one. The core decides (permission, gate, audit, label) before it calls; the gateway only carries.
import type { Tool } from "@modelcontextprotocol/sdk/types.js";

/** One upstream tool as offered: its dispatched name and the server (by its policy name) it belongs to. */
export interface GatewayTool {
  readonly name: string;
  readonly server: string;
  readonly tool: Tool;
}

/** The result of a call the gateway carried: the text for the model, and whether it is an error. */
export interface GatewayResult {
  readonly text: string;
  readonly isError: boolean;
}

/** One declared server: whether its tools are offered, how many, and why not (a failed connect, a missing key). */
export interface GatewayServerState {
  readonly name: string;
  readonly offered: boolean;
  readonly tools: number;
  readonly message?: string;
}

/** The admin's MCP servers, as the core sees them. */
export interface ToolGateway {
  /** Resolves once every server was connected to (or failed to be) and its tools listed. */
  ready(): Promise<void>;
  /** The tools offered to the current stage, each server's fixed at its first listing: a later list never adds one. */
  tools(): readonly GatewayTool[];
  /** The tool of this dispatched name, if offered to the current stage. */
  find(name: string): GatewayTool | undefined;
  /** Whether the name is in a declared server's namespace (`<server>__…`), offered or not. */
  claims(name: string): boolean;
  /** Each declared server's state (reported on `/v1/status` and the Run's status). */
  servers(): readonly GatewayServerState[];
  /** Calls the tool upstream. */
  call(name: string, args: Record<string, unknown>): Promise<GatewayResult>;
  /** Whether the server (by its policy name) is connected and listed this tool (by its upstream name). */
  lists(server: string, tool: string): boolean;
  /** Calls a server's tool by its upstream name, whether or not the stage is offered it (web_search's backend), within `timeoutMs`. */
  callUpstream(server: string, tool: string, args: Record<string, unknown>, timeoutMs: number): Promise<GatewayResult>;
  /** Disconnects every server. */
  close(): Promise<void>;
}
