// Issue 30's "done when" for the OpenAI Agents SDK (our program images/openai-agents/agent.mjs on @openai/agents),
// on the real node: the scenario of harness/client-run.ts with the image leviath-openai-agents, the model server
// speaking OpenAI's Responses API (refusing a request the service would refuse), and the sidecar's tools as the
// SDK offers MCP tools: function tools of the same names.
import { describeClientRun, openAiModel } from "./harness/client-run.ts";

describeClientRun({
  kind: "openai-agents", run: "oa-digest", agent: "oa-notes", ...openAiModel("sk-e2e-openai-agents"),
  toolName: (tool) => tool,
});
