// A policy rollout reaching a running Run (docs/operations.md, "Rolling out a policy"): the controller resolves the
// run policy the Run would have under a later LeviathPolicy generation, from the Agent spec pinned at start, and
// writes it to one of two ConfigMaps with fixed names (the sidecar's Role names them): `<run>-policy-enforced`, a
// generation in force later than the pinned one, and `<run>-policy-candidate`, a generation out in warn or audit
// mode. They change as the rollout moves; the sidecar reads only bytes whose SHA-256 the Run's status records.
import type { RunPolicy } from "../api/run-policy.ts";
import type { KubeObject } from "./kube-types.ts";
import { buildChildMeta, buildChildName, COMPONENT, type RunRef } from "./names.ts";
import { SNAPSHOT_KEY } from "./run-snapshot.ts";

/** The two rollout snapshots a Run can have. */
export const ROLLOUT_ROLES = ["enforced", "candidate"] as const;
/** Which rollout snapshot: the generation in force, or the candidate. */
export type RolloutRole = (typeof ROLLOUT_ROLES)[number];

/** The ConfigMap name of a Run's rollout snapshot. */
export function buildRolloutSnapshotName(run: string, role: RolloutRole): string {
  return buildChildName(run, `policy-${role}`);
}

/** The `run-policy.json` text of a rollout snapshot: the same JSON layout as a resumed snapshot's. */
export function buildRolloutSnapshotText(runPolicy: RunPolicy): string {
  return `${JSON.stringify(runPolicy, null, 2)}\n`;
}

/** The ConfigMap of a rollout snapshot, a child of the Run (pruned when the rollout no longer needs it). */
export function buildRolloutConfigMap(run: RunRef, agent: string, role: RolloutRole, text: string): KubeObject {
  const meta = buildChildMeta(run, agent, { name: buildRolloutSnapshotName(run.name, role), component: COMPONENT.policy });
  return { apiVersion: "v1", kind: "ConfigMap", metadata: meta, data: { [SNAPSHOT_KEY.runPolicy]: text } };
}
