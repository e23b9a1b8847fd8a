// Shared inputs of the builder tests (not shipped: only *.test.ts import it).
import { AgentSpecSchema, type AgentSpecInput } from "../api/agent.ts";
import { LeviathPolicySpecSchema, type LeviathPolicySpecInput } from "../api/leviath-policy.ts";
import { RunSpecSchema, type RunSpecInput } from "../api/run.ts";
import type { RunRef } from "./names.ts";
import { buildRunSnapshot, type RunSnapshot } from "./run-snapshot.ts";

/** A Run identity for tests. */
export const RUN: RunRef = { name: "digest-1", namespace: "team-a", uid: "0000-1111" };

/** Build a snapshot from YAML-shaped inputs; throws when the inputs cannot make one (a test bug). */
export function snapshotOf(agent: AgentSpecInput, policy?: LeviathPolicySpecInput, run: Partial<RunSpecInput> = {}): RunSnapshot {
  const spec = AgentSpecSchema.parse(agent);
  const result = buildRunSnapshot({
    agent: { name: "notes", namespace: RUN.namespace, generation: 3, spec, written: agent as Record<string, unknown> },
    policy: policy ? { name: "cluster", generation: 7, spec: LeviathPolicySpecSchema.parse(policy) } : undefined,
    run: RunSpecSchema.parse({ agentRef: { name: "notes" }, ...run }),
  });
  if (!result.ok) throw new Error(result.message);
  return result.value;
}
