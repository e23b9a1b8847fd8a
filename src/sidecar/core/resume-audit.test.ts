import { describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../api/run-policy.ts";
import { buildResumeRecord } from "./resume-audit.ts";

const base = RunPolicySchema.parse({
  agent: { key: "ns/a", name: "a" },
  stages: [{ name: "main", sandbox: { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" } }],
  entryStage: "main",
  launch: { mode: "interactive", allow: [] },
  toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
  readPaths: { declared: ["/a", "/b"], granted: ["/a"], allowBlueprintReadPaths: false },
  taint: { tracking: true, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 60, shellTimeoutSeconds: 10 },
});
const at = { timestamp: 100, agentId: "run-1", stage: "main" };

describe("buildResumeRecord", () => {
  it("records what a switch to a resumed snapshot added and removed, and the policy generation", () => {
    const next = { ...base, readPaths: { ...base.readPaths, granted: ["/b"], resumed: { sequence: 1, policyGeneration: 4 } } };
    expect(buildResumeRecord(base, next, at)).toEqual({
      timestamp: 100, agent_id: "run-1", call_id: "resume-1", tool_name: "read_paths", stage: "main",
      decision: "resume", decision_source: "read_path_resume", code: "grants-reresolved",
      read_paths_resumed: { sequence: 1, policy_generation: 4, added: ["/b"], removed: ["/a"], allow_blueprint_read_paths: false },
    });
  });

  it("records nothing for a reload that is not a new resume", () => {
    const resumed = { ...base, readPaths: { ...base.readPaths, resumed: { sequence: 2 } } };
    expect(buildResumeRecord(base, base, at)).toBeUndefined();
    expect(buildResumeRecord(resumed, resumed, at)).toBeUndefined();
  });
});
