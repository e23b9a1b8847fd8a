import { describe, expect, it } from "vitest";
import { ensureClient, OPENAI_AGENTS } from "../clients/install-client.ts";
import { expectFinished, expectRefusedAtTimeout, expectWithdrawn, runUnanswered, shellResult, type WaitClient } from "./approval-wait.ts";

// Approvals the OpenAI Agents SDK can wait for (docs/runtimes.md "Approvals and client timeouts"): our program on
// the real SDK (pinned) started by `leviath adapter openai-agents` against the real sidecar, a shell prompt nobody
// answers in time, and a person's allow that comes too late. approval-wait.ts says how the run goes.
const client = (over: Partial<WaitClient>): WaitClient => ({ kind: "openai-agents", toolName: (t) => t, bin: ensureClient(OPENAI_AGENTS), model: "openai/gpt-test", interactionSeconds: 4, ...over });

describe("leviath adapter openai-agents: a prompt nobody answers in time", { timeout: 300_000 }, () => {
  it("with the adapter's settings (the SDK's MCP timeout past the interaction timeout) the SDK waits: the sidecar refuses at the timeout, the model gets the refusal, a later allow finds no prompt, nothing ran", async () => {
    expectRefusedAtTimeout(await runUnanswered(client({})));
  });

  it("the SDK given up first (its MCP timeout cut to 2 s): it cancels the call (notifications/cancelled), which is withdrawn; a later allow is refused 410, nothing ran", async () => {
    const run = await runUnanswered(client({ interactionSeconds: 60, giveUp: { program: "leviath-openai-agents", lines: "export LEVIATH_MCP_TIMEOUT_MS=2000" } }));
    expectWithdrawn(run, "cancelled");
    expectFinished(run);
    // What the SDK told its model: its generic tool error (the timeout is in its log, not the model's input).
    expect(shellResult(run)).toBe("An error occurred while running the tool. Please try again.");
  });
});
