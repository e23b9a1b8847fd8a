import { describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../api/run-policy.ts";
import { computeSandboxPlan } from "../../sandbox/sandbox-plan.ts";
import { computePodTarget } from "./sandbox-targets.ts";

const sandbox = (kind: string, image?: string) => ({ kind, ...(image ? { image } : {}), network: false, mounts: [], persist: false, onUnavailable: "error", source: "policy" });
const policy = RunPolicySchema.parse({
  agent: { key: "ns/a", name: "a" },
  stages: [{ name: "plan", sandbox: sandbox("none") }, { name: "build", sandbox: sandbox("container", "node:22") }, { name: "test", sandbox: sandbox("container", "node:22") }, { name: "broken", sandbox: sandbox("container") }],
  entryStage: "plan",
  launch: { mode: "interactive" },
  toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
  taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 3600, shellTimeoutSeconds: 60 },
});

describe("computePodTarget", () => {
  it("names the pod exactly as the controller does, shared by stages with the same sandbox", () => {
    const [plan] = computeSandboxPlan("run-1", policy);
    expect(computePodTarget("run-1", policy, policy.stages[1]!)).toEqual({ pod: plan!.pod, container: "sandbox" });
    expect(computePodTarget("run-1", policy, policy.stages[2]!)).toEqual({ pod: plan!.pod, container: "sandbox" });
  });

  it("names the sandbox pods after the warm pool pod a Run adopted, as the controller does for that Run", () => {
    const [plan] = computeSandboxPlan("notes-pool-0a1b2c3d4e", policy);
    expect(plan!.pod).toMatch(/^notes-pool-0a1b2c3d4e-sbx-[0-9a-f]{16}$/);
    expect(computePodTarget("run-1", policy, policy.stages[1]!, "notes-pool-0a1b2c3d4e")).toEqual({ pod: plan!.pod, container: "sandbox" });
  });

  it("runs a stage of kind none in the engine pod's agent container, and refuses a sandbox that cannot start", () => {
    expect(computePodTarget("run-1", policy, policy.stages[0]!)).toEqual({ pod: "run-1-engine", container: "agent" });
    expect(computePodTarget("run-1", policy, policy.stages[3]!)).toEqual({ error: "the sandbox of stage 'broken' cannot start: container sandbox requires an `image`" });
  });
});
