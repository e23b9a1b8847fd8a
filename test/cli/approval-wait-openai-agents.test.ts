import { expect } from "vitest";
import { OPENAI_AGENTS } from "../clients/install-client.ts";
import { describeApprovalWaits } from "./approval-wait.ts";

// Approvals the OpenAI Agents SDK can wait for (docs/runtimes.md "Approvals and client timeouts"): our program on
// the real SDK (pinned) started by `leviath adapter openai-agents` against the real sidecar, a shell prompt nobody
// answers in time, and a person's allow that comes too late. approval-wait.ts says how the run goes.
describeApprovalWaits({
  client: { kind: "openai-agents", toolName: (t) => t, model: "openai/gpt-test" },
  pkg: OPENAI_AGENTS,
  setting: "LEVIATH_MCP_TIMEOUT_MS",
  giveUp: { program: "leviath-openai-agents", lines: "export LEVIATH_MCP_TIMEOUT_MS=2000" },
  // The SDK tells its model its generic tool error (the timeout is in its log, not in the model's input).
  told: (result) => expect(result).toBe("An error occurred while running the tool. Please try again."),
});
