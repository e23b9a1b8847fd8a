// The mcp-command recipe of docs/runtimes.md, read from the page: the LeviathPolicy that declares a runtime
// template and the Agent that names it. The CLI test runs the real client under exactly this template, and the
// docs test checks the page's claims about it, so the page cannot show a template that was not run.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { AgentSpecSchema, type AgentSpec } from "../../src/api/agent.ts";
import { LeviathPolicySpecSchema, type LeviathPolicySpec } from "../../src/api/leviath-policy.ts";
import { repo } from "./run-cli.ts";

/** The page's policy declaring runtime templates, and its Agent of kind mcp-command (with the spec as written). */
export function readMcpCommandRecipe(): { policy: LeviathPolicySpec; agent: AgentSpec; written: Record<string, unknown> } {
  const doc = readFileSync(repo("docs/runtimes.md"), "utf8");
  const yamls = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const objects = yamls.flatMap((y) => parseAllDocuments(y).map((d) => d.toJS() as { kind: string; spec: Record<string, unknown> }));
  const policy = objects.find((o) => o.kind === "LeviathPolicy" && o.spec["runtimeTemplates"] !== undefined);
  const agent = objects.find((o) => o.kind === "Agent" && (o.spec["runtime"] as { kind?: string } | undefined)?.kind === "mcp-command");
  if (!policy || !agent) throw new Error("docs/runtimes.md has no LeviathPolicy with runtimeTemplates and Agent of kind mcp-command");
  return { policy: LeviathPolicySpecSchema.parse(policy.spec), agent: AgentSpecSchema.parse(agent.spec), written: agent.spec };
}
