import { expect } from "vitest";
import { CODEX_MCP_SERVER } from "../../src/runtime/adapters/codex.ts";
import { CODEX } from "../clients/install-client.ts";
import { describeApprovalWaits } from "./approval-wait.ts";

// Approvals Codex can wait for (docs/runtimes.md "Approvals and client timeouts"): the real Codex CLI (pinned,
// unmodified) started by `leviath adapter codex` against the real sidecar, a shell prompt nobody answers in time,
// and a person's allow that comes too late. approval-wait.ts says how the run goes.
describeApprovalWaits({
  client: { kind: "codex", toolName: (t) => `mcp__${CODEX_MCP_SERVER}__${t}`, model: "openai/gpt-6.2-sol" },
  pkg: CODEX,
  setting: "tool_timeout_sec",
  giveUp: { program: "codex", lines: "", extraArgs: `-c mcp_servers.${CODEX_MCP_SERVER}.tool_timeout_sec=2` },
  // Codex tells its model the call failed, timed out after 2 s.
  told: (result) => expect(result).toContain(`tool call failed for \`${CODEX_MCP_SERVER}/shell\`\n\nCaused by:\n    timed out awaiting tools/call after 2s`),
});
