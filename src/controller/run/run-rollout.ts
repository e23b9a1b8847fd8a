// A policy rollout reaching a running Run (docs/operations.md, "Rolling out a policy"), pure: the run policy this
// Run would have under the generation in force (when later than the one it was pinned to) and under a warn or
// audit candidate, each resolved from the Agent spec and Run launch pinned at start, as the ConfigMaps to write and
// the `status.policyRollout` that names them with their digests. The sidecar enforces the stricter of the pinned and
// the in-force decision, so a later generation can tighten a running Run and never loosen it.
import { AgentSpecSchema } from "../../api/agent.ts";
import { buildAgentKey } from "../../api/common.ts";
import type { LeviathPolicySpec } from "../../api/leviath-policy.ts";
import type { RunSpec } from "../../api/run.ts";
import type { RunPolicyRollout } from "../../api/status.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { buildRunPolicy } from "../../policy/run-policy-merge.ts";
import type { RunRef } from "../../sandbox/names.ts";
import { buildRolloutConfigMap, buildRolloutSnapshotName, buildRolloutSnapshotText, type RolloutRole } from "../../sandbox/rollout-snapshot.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import type { PolicyState } from "../leviath-policy/policy-state.ts";
import { computeSnapshotSha256 } from "./run-resume.ts";

/** The rollout of a pass: the status to record (absent: none) and the ConfigMaps it names. */
export interface RolloutPlan {
  readonly status: RunPolicyRollout | undefined;
  readonly configMaps: readonly KubeObject[];
}

const NONE: RolloutPlan = { status: undefined, configMaps: [] };

/** The run policy the pinned Agent and launch resolve to under `spec`, or undefined when the pinned blueprint does not parse. */
function resolveUnder(snapshot: RunSnapshot, run: RunSpec, policy: { spec: LeviathPolicySpec; generation: number }): string | undefined {
  const agent = AgentSpecSchema.safeParse(snapshot.runtime.agent);
  if (!agent.success) return undefined;
  const { name, generation } = snapshot.controller.agent;
  const namespace = snapshot.runPolicy.agent.key.split("/")[0] ?? "";
  const runPolicy = buildRunPolicy(agent.data, { key: buildAgentKey(namespace, name), name }, policy.spec, {
    mode: snapshot.runtime.run.mode, allow: run.allowTools, agentGeneration: generation, policyGeneration: policy.generation,
  });
  return buildRolloutSnapshotText(runPolicy);
}

/** One rollout snapshot: its ConfigMap and its status entry. */
function snapshotOf(ref: RunRef, snapshot: RunSnapshot, role: RolloutRole, resolved: { text: string; generation: number }): { cm: KubeObject; entry: { generation: number; snapshot: string; snapshotSha256: string } } {
  return {
    cm: buildRolloutConfigMap(ref, snapshot.controller.agent.name, role, resolved.text),
    entry: { generation: resolved.generation, snapshot: buildRolloutSnapshotName(ref.name, role), snapshotSha256: computeSnapshotSha256(resolved.text) },
  };
}

/**
 * The rollout of a running Run this pass: none for a Run that is not active. The generation in force (the last
 * valid one while an edit is invalid) is resolved only when it is later than the pinned one; a candidate whenever
 * one is out.
 */
export function resolveRollout(input: { ref: RunRef; run: RunSpec; snapshot: RunSnapshot; policy: PolicyState; active: boolean }): RolloutPlan {
  const { ref, run, snapshot, policy, active } = input;
  // An invalid edit changes nothing a running Run enforces: the last valid generation stays in force, no candidate.
  const inForce = policy.kind === "valid" ? policy : policy.kind === "invalid" ? policy.lastGood : undefined;
  if (!active || inForce === undefined) return NONE;
  const pinned = snapshot.controller.policy.generation;
  const configMaps: KubeObject[] = [];
  const status: RunPolicyRollout = {};
  if (inForce.generation > (pinned ?? 0)) {
    const text = resolveUnder(snapshot, run, inForce);
    if (text !== undefined) {
      const { cm, entry } = snapshotOf(ref, snapshot, "enforced", { text, generation: inForce.generation });
      configMaps.push(cm);
      status.enforced = entry;
    }
  }
  const candidate = policy.kind === "valid" ? policy.candidate : undefined;
  if (candidate !== undefined) {
    const text = resolveUnder(snapshot, run, candidate);
    if (text !== undefined) {
      const { cm, entry } = snapshotOf(ref, snapshot, "candidate", { text, generation: candidate.generation });
      configMaps.push(cm);
      status.candidate = { ...entry, enforcement: candidate.enforcement };
    }
  }
  return configMaps.length > 0 ? { status, configMaps } : NONE;
}
