import { describe, expect, it } from "vitest";
import { CLAUDE_MCP_SERVER } from "../../src/runtimes/claude-code.ts";
import { CLAUDE_CODE, ensureClient } from "../clients/install-client.ts";
import { expectFinished, expectRefusedAtTimeout, expectWithdrawn, runUnanswered, shellResult, type WaitClient } from "./approval-wait.ts";

// Approvals Claude Code can wait for (docs/runtimes.md "Approvals and client timeouts"): the real Claude Code
// (pinned, unmodified) started by `leviath adapter claude-code` against the real sidecar, a shell prompt nobody
// answers in time, and a person's allow that comes too late. approval-wait.ts says how the run goes.
const client = (over: Partial<WaitClient>): WaitClient => ({ kind: "claude-code", toolName: (t) => `mcp__${CLAUDE_MCP_SERVER}__${t}`, bin: ensureClient(CLAUDE_CODE), interactionSeconds: 4, ...over });

describe("leviath adapter claude-code: a prompt nobody answers in time", { timeout: 300_000 }, () => {
  it("with the adapter's settings (MCP_TOOL_TIMEOUT past the interaction timeout) Claude Code waits: the sidecar refuses at the timeout, the model gets the refusal, a later allow finds no prompt, nothing ran", async () => {
    expectRefusedAtTimeout(await runUnanswered(client({})));
  });

  it("Claude Code given up first (MCP_TOOL_TIMEOUT cut to 2 s): it cancels the call (notifications/cancelled), which is withdrawn; a later allow is refused 410, nothing ran", async () => {
    const run = await runUnanswered(client({ interactionSeconds: 60, giveUp: { program: "claude", lines: "export MCP_TOOL_TIMEOUT=2000" } }));
    expectWithdrawn(run, "cancelled");
    expectFinished(run);
    // What Claude Code told its model: the call timed out (not that it ran, nor that it was refused).
    expect(shellResult(run)).toBe(`MCP server "${CLAUDE_MCP_SERVER}" tool "shell" timed out after 2s`);
  });
});
