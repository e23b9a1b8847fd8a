// Response size caps (taint-gate spec §10): constants, not configuration, because a knob that only
// matters under attack is a knob for the attacker. The texts name the cap and the peer.

const MIB = 1024 * 1024;

/** A buffered reply body (provider JSON, MCP HTTP, OAuth exchanges, update check): 64 MiB. */
export const MAX_BODY_BYTES = 64 * MIB;

/** One SSE event or partial NDJSON line of a streaming reply: 8 MiB. */
export const MAX_STREAM_FRAME_BYTES = 8 * MIB;

/** One line from an MCP stdio server, newline included: 1 MiB. */
export const MAX_MCP_LINE_BYTES = 1 * MIB;

/** A cap as text: `N MiB` for a whole number of MiB, otherwise `N bytes`. */
export function formatCap(bytes: number): string {
  return bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${bytes} bytes`;
}

/** True when reading `next` more bytes after `soFar` would pass the cap (a body of exactly the cap is fine). */
export function isOverCap(soFar: number, next: number, cap: number): boolean {
  return soFar + next > cap;
}

/** The failure when a buffered body passes its cap; `host` is the URL's host. */
export function buildBodyCapMessage(host: string, cap: number = MAX_BODY_BYTES): string {
  return `response body exceeded ${formatCap(cap)} from ${host}`;
}

/** The failure when one streamed frame passes its cap. */
export function buildStreamFrameCapMessage(peer: string, cap: number = MAX_STREAM_FRAME_BYTES): string {
  return `stream frame exceeded ${formatCap(cap)} from ${peer}`;
}

/** The failure when one MCP stdio line passes its cap. */
export function buildMcpLineCapMessage(cap: number = MAX_MCP_LINE_BYTES): string {
  return `line exceeded ${formatCap(cap)} from the MCP server`;
}

/** The debug note when an MCP server's stderr line passes the cap (the line is dropped, draining goes on). */
export function buildMcpStderrLineCapMessage(cap: number = MAX_MCP_LINE_BYTES): string {
  return `line exceeded ${formatCap(cap)} from the MCP server's stderr`;
}

/** The error surfaced for an oversized MCP line, with the server's stderr tail when there is one. */
export function buildMcpReadFailureMessage(stderrTail?: string, cap: number = MAX_MCP_LINE_BYTES): string {
  const base = `Failed to read from MCP server: ${buildMcpLineCapMessage(cap)}`;
  return stderrTail === undefined || stderrTail === "" ? base : `${base}\nserver stderr:\n${stderrTail}`;
}
