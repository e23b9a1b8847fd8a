// Issue 30's "done when" for the OpenAI Agents SDK (our program images/openai-agents/agent.mjs on @openai/agents),
// on the real node: the scenario of harness/client-run.ts with the image leviath-openai-agents, the model server
// speaking OpenAI's Responses API (refusing a request the service would refuse), and the sidecar's tools as the
// SDK offers MCP tools: function tools of the same names.
import { describeClientRun } from "./harness/client-run.ts";

const MODEL_KEY = "sk-e2e-openai-agents";

describeClientRun({
  kind: "openai-agents", run: "oa-digest", agent: "oa-notes",
  model: { provider: "openai", model: "gpt-5.5" },
  credentials: (url) => ({ OPENAI_API_KEY: MODEL_KEY, OPENAI_BASE_URL: `${url}/v1` }),
  keyHeader: ["authorization", `Bearer ${MODEL_KEY}`],
  toolName: (tool) => tool,
});
