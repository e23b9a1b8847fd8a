// Issue 30's "done when" for Codex (`codex exec`), on the real node: the scenario of harness/client-run.ts with the
// image leviath-codex, the model server speaking OpenAI's Responses API (refusing a request the service would
// refuse), and the sidecar's tools in Codex's namespace of its MCP server, beside Codex's three readers of MCP
// resources, which only ask the sidecar.
import { CODEX_MCP_SERVER } from "../../src/runtime/adapters/codex.ts";
import { describeClientRun, openAiModel } from "./harness/client-run.ts";

describeClientRun({
  kind: "codex", run: "codex-digest", agent: "codex-notes", ...openAiModel("sk-e2e-codex"),
  toolName: (tool) => `mcp__${CODEX_MCP_SERVER}__${tool}`,
  ownTools: ["list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource"],
});
