import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { ensureClient, OPENAI_AGENTS } from "../clients/install-client.ts";
import { repo } from "./run-cli.ts";
import { describeApprovalWaits, expectRefusedAtTimeout, runUnanswered } from "./approval-wait.ts";

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

describe("leviath adapter openai-agents: a prompt that waits longer than the HTTP stack's own limits", () => {
  // Node's fetch gives up on a response whose headers (or whose next body bytes) have not come in 300 s: the
  // sidecar's SSE answer (headers at once, a keep-alive comment every 15 s) is what lets the SDK wait out an
  // interaction timeout past that. Without it the SDK gave up at 300 s and the call was withdrawn, cutting the
  // person's time to answer to five minutes. Here both limits are cut to 25 s in the client's process (the SDK
  // itself unmodified), so the same proof takes 45 s instead of 310.
  it("with Node's fetch limits at 25 s and an interaction timeout of 45 s the SDK still waits: the sidecar refuses at 45 s, not the client at 25 s", async () => {
    const bin = ensureClient(OPENAI_AGENTS);
    const limits = pathToFileURL(repo("test/cli/fixtures/fetch-limits.mjs")).href;
    const giveUp = { program: "leviath-openai-agents", lines: `export LEVIATH_TEST_FETCH_LIMIT_MS=25000 NODE_OPTIONS='--import=${limits}'` };
    // A client that gave up at 25 s would have withdrawn the call (gave_up in the audit, 410 to the late allow).
    expectRefusedAtTimeout(await runUnanswered({ kind: "openai-agents", toolName: (t) => t, model: "openai/gpt-test", bin, interactionSeconds: 45, giveUp }));
  }, 300_000);
});
