import { describe, expect, it } from "vitest";
import { CODEX_MCP_SERVER } from "../../src/runtimes/codex.ts";
import { CODEX, ensureClient } from "../clients/install-client.ts";
import { expectFinished, expectRefusedAtTimeout, expectWithdrawn, runUnanswered, shellResult, type WaitClient } from "./approval-wait.ts";

// Approvals Codex can wait for (docs/runtimes.md "Approvals and client timeouts"): the real Codex CLI (pinned,
// unmodified) started by `leviath adapter codex` against the real sidecar, a shell prompt nobody answers in time,
// and a person's allow that comes too late. approval-wait.ts says how the run goes.
const client = (over: Partial<WaitClient>): WaitClient => ({ kind: "codex", toolName: (t) => `mcp__${CODEX_MCP_SERVER}__${t}`, bin: ensureClient(CODEX), model: "openai/gpt-6.2-sol", interactionSeconds: 4, ...over });

describe("leviath adapter codex: a prompt nobody answers in time", { timeout: 300_000 }, () => {
  it("with the adapter's settings (tool_timeout_sec past the interaction timeout) Codex waits: the sidecar refuses at the timeout, the model gets the refusal, a later allow finds no prompt, nothing ran", async () => {
    expectRefusedAtTimeout(await runUnanswered(client({})));
  });

  it("Codex given up first (tool_timeout_sec cut to 2 s with -c): it cancels the call (notifications/cancelled), which is withdrawn; a later allow is refused 410, nothing ran", async () => {
    const run = await runUnanswered(client({ interactionSeconds: 60, giveUp: { program: "codex", lines: "", extraArgs: `-c mcp_servers.${CODEX_MCP_SERVER}.tool_timeout_sec=2` } }));
    expectWithdrawn(run, "cancelled");
    expectFinished(run);
    // What Codex told its model: the call failed, timed out after 2 s.
    expect(shellResult(run)).toContain("tool call failed for `leviath/shell`\n\nCaused by:\n    timed out awaiting tools/call after 2s");
  });
});
