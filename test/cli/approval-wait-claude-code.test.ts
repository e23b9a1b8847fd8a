import { expect } from "vitest";
import { CLAUDE_MCP_SERVER } from "../../src/runtime/adapters/claude-code.ts";
import { CLAUDE_CODE } from "../clients/install-client.ts";
import { describeApprovalWaits } from "./approval-wait.ts";

// Approvals Claude Code can wait for (docs/runtimes.md "Approvals and client timeouts"): the real Claude Code
// (pinned, unmodified) started by `leviath adapter claude-code` against the real sidecar, a shell prompt nobody
// answers in time, and a person's allow that comes too late. approval-wait.ts says how the run goes.
describeApprovalWaits({
  client: { kind: "claude-code", toolName: (t) => `mcp__${CLAUDE_MCP_SERVER}__${t}` },
  pkg: CLAUDE_CODE,
  setting: "MCP_TOOL_TIMEOUT",
  giveUp: { program: "claude", lines: "export MCP_TOOL_TIMEOUT=2000" },
  // Claude Code tells its model the call timed out (not that it ran, nor that it was refused).
  told: (result) => expect(result).toBe(`MCP server "${CLAUDE_MCP_SERVER}" tool "shell" timed out after 2s`),
});
