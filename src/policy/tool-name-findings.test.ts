import { describe, expect, it } from "vitest";
import { AgentSpecSchema } from "../api/agent.ts";
import { CLUSTER_ADVICE, type FindingAdvice } from "../api/findings.ts";
import { EMPTY_POLICY, LeviathPolicySpecSchema } from "../api/leviath-policy.ts";
import { computeAgentFindings } from "./agent-findings.ts";
import { computePolicyFindings } from "./policy-findings.ts";
import { computeBlueprintToolNameFindings, computePolicyToolNameFindings } from "./tool-name-findings.ts";
import { findNearestToolName, isKnownToolName } from "./tool-names.ts";

const TOML: FindingAdvice = { policy: "config.toml", blueprint: "agent.leviath" };
const spec = AgentSpecSchema.parse({
  agent: { name: "a" },
  toolPermissions: { shel: "ask", read_file: "allow", github__create_issue: "deny" },
  stages: [{ name: "survey", availableTools: ["read_fiel", "list_dir", "frobnicate"], toolPermissions: { Shell: "deny" } }],
});

describe("tool names", () => {
  it("knows the built-ins and their aliases, '*' and MCP tools; finds the nearest built-in within two edits", () => {
    for (const n of ["shell", "bash", "read_file", "*", "github__create_issue"]) expect(isKnownToolName(n)).toBe(true);
    for (const n of ["shel", "read_fiel", "Shell", "frobnicate"]) expect(isKnownToolName(n)).toBe(false);
    expect([findNearestToolName("shel"), findNearestToolName("read_fiel"), findNearestToolName("Shell"), findNearestToolName("webfetch")]).toEqual(["shell", "read_file", "shell", "web_fetch"]);
    expect(findNearestToolName("frobnicate")).toBeUndefined();
  });
});

describe("unknown-tool-name findings", () => {
  it("name each misspelt entry of an Agent with the nearest known name and the field to write", () => {
    const f = computeBlueprintToolNameFindings(spec, CLUSTER_ADVICE);
    expect(f.map((x) => x.message)).toEqual([
      "spec.toolPermissions.shel: no tool is named 'shel' (did you mean 'shell'?); the entry governs nothing, and the tool it was meant for keeps its default permission",
      "spec.stages[0].toolPermissions.Shell: no tool is named 'Shell' (did you mean 'shell'?); the entry governs nothing, and the tool it was meant for keeps its default permission",
      "spec.stages[0].availableTools[0] 'read_fiel': no tool is named 'read_fiel' (did you mean 'read_file'?); the stage offers no such tool",
      "spec.stages[0].availableTools[2] 'frobnicate': no tool is named 'frobnicate'; the stage offers no such tool",
    ]);
    expect(f[0]).toMatchObject({ severity: "warning", code: "unknown-tool-name", fix: "write spec.toolPermissions.shell instead" });
    expect(f[2]).toMatchObject({ stage: "survey", fix: "write spec.stages[0].availableTools[0] 'read_file' instead" });
    expect(f[3]?.fix).toContain("'<server>__<tool>'");
  });

  it("speak agent.leviath and config.toml to their authors", () => {
    const f = computeBlueprintToolNameFindings(spec, TOML);
    expect(f.map((x) => x.fix)).toContain("write [tool_permissions] shell instead");
    expect(f.map((x) => x.fix)).toContain('write [stages.survey] available_tools[0] "read_file" instead');
    const policy = LeviathPolicySpecSchema.parse({ toolPermissions: { web_fetc: "deny" }, agentToolPermissions: { "ns/a": { shel: "ask" } } });
    expect(computePolicyToolNameFindings(policy, TOML).map((x) => x.fix)).toEqual(["write [tool_permissions] web_fetch in your config.toml instead", 'write [agent_tool_permissions."ns/a"] shell in your config.toml instead']);
    expect(computePolicyToolNameFindings(policy, CLUSTER_ADVICE)[1]?.message).toMatch(/^spec\.agentToolPermissions\["ns\/a"\]\.shel of the LeviathPolicy: no tool is named 'shel' \(did you mean 'shell'\?\)/);
  });

  it("are part of an Agent's findings, and of the policy's", () => {
    const all = computeAgentFindings({ spec, name: "a", key: "ns/a", policy: EMPTY_POLICY, workdir: "/w", home: undefined, advice: CLUSTER_ADVICE });
    expect(all.filter((x) => x.code === "unknown-tool-name")).toHaveLength(4);
    expect(computePolicyFindings(LeviathPolicySpecSchema.parse({ toolPermissions: { shel: "ask" } }), CLUSTER_ADVICE).map((x) => x.code)).toEqual(["unknown-tool-name"]);
  });
});
