// Issue 30's "done when" for Claude Code (`claude -p`), on the real node: the scenario of harness/client-run.ts with
// the image leviath-claude-code, the model server speaking Anthropic's Messages API, and the sidecar's tools as
// Claude Code names MCP tools (`mcp__leviath__<tool>`).
import { describeClientRun } from "./harness/client-run.ts";

const MODEL_KEY = "sk-ant-e2e-claude-code";

describeClientRun({
  kind: "claude-code", run: "cc-digest", agent: "cc-notes",
  model: { provider: "anthropic", model: "claude-sonnet-4-6" },
  credentials: (url) => ({ ANTHROPIC_API_KEY: MODEL_KEY, ANTHROPIC_BASE_URL: url }),
  keyHeader: ["x-api-key", MODEL_KEY],
  toolName: (tool) => `mcp__leviath__${tool}`,
});
