// Resuming a Run (read-paths spec §9, "Resume"): the read-path grants, and only they, are re-resolved against the
// current LeviathPolicy. The Agent's declarations stay those pinned at start, and so does every other setting
// (permissions, floors, gate rules, modes, limits). The result is a new immutable snapshot the sidecar switches to.
import { z } from "zod";
import type { LeviathPolicySpec } from "../api/leviath-policy.ts";
import { RunPolicySchema, type RunPolicy } from "../api/run-policy.ts";
import { computeAgentGrants } from "../policy/run-policy-merge.ts";
import { buildCanonicalJson } from "./hash.ts";
import type { KubeObject } from "./kube-types.ts";
import { buildChildMeta, buildChildName, COMPONENT, type RunRef } from "./names.ts";
import { SNAPSHOT_KEY } from "./run-snapshot.ts";

/** At most this many re-resolved snapshots per Run (the sidecar's Role names each one). */
export const MAX_RESUME_SNAPSHOTS = 16;

/** Keys of a resumed snapshot's ConfigMap: the run policy the sidecar enforces, and what the resume changed. */
export const RESUME_SNAPSHOT_KEY = { runPolicy: SNAPSHOT_KEY.runPolicy, resume: "resume.json" } as const;

/** The name of the `sequence`-th resumed snapshot (1-based): `<run>-policy-r01` ... `<run>-policy-r16`. */
export function buildResumeSnapshotName(run: string, sequence: number): string {
  return buildChildName(run, `policy-r${String(sequence).padStart(2, "0")}`);
}

/** Every name a resumed snapshot of this run can have, for the sidecar's Role. */
export function listResumeSnapshotNames(run: string): string[] {
  return Array.from({ length: MAX_RESUME_SNAPSHOTS }, (_, i) => buildResumeSnapshotName(run, i + 1));
}

/** What a resume changed, as recorded next to the snapshot (and in the audit). */
export const ResumeRecordSchema = z.strictObject({
  sequence: z.number().int().min(1),
  token: z.string(),
  policyGeneration: z.number().int().min(0).optional(),
  added: z.array(z.string()),
  removed: z.array(z.string()),
  allowBlueprintReadPaths: z.strictObject({ before: z.boolean(), after: z.boolean() }),
});
/** What a resume changed. */
export type ResumeRecord = z.infer<typeof ResumeRecordSchema>;

/** The re-resolved run policy and how it differs from the one in force. */
export interface ResumedGrants {
  runPolicy: RunPolicy;
  added: string[];
  removed: string[];
  allowBlueprintReadPaths: { before: boolean; after: boolean };
  /** False: the policy grants exactly what the run already has. */
  changed: boolean;
}

/**
 * Re-resolve the grants of a run: `base` is the snapshot pinned at start (its declarations and every other
 * setting are kept), `inForce` the snapshot the run enforces now (the base, or the last resume), `policy` the
 * LeviathPolicy in force. Grants are looked up by the pinned `namespace/name` key, as at start.
 */
export function computeResumedGrants(base: RunPolicy, inForce: RunPolicy, policy: { spec: LeviathPolicySpec; generation?: number }, sequence: number): ResumedGrants {
  const granted = computeAgentGrants(policy.spec, base.agent.key);
  const allow = policy.spec.readPaths.allowBlueprintReadPaths;
  const before = new Set(inForce.readPaths.granted);
  const after = new Set(granted);
  const added = granted.filter((g, i) => !before.has(g) && granted.indexOf(g) === i);
  const removed = inForce.readPaths.granted.filter((g, i) => !after.has(g) && inForce.readPaths.granted.indexOf(g) === i);
  const changed = added.length > 0 || removed.length > 0 || allow !== inForce.readPaths.allowBlueprintReadPaths;
  const runPolicy: RunPolicy = {
    ...base,
    readPaths: {
      declared: base.readPaths.declared,
      granted,
      allowBlueprintReadPaths: allow,
      resumed: { sequence, ...(policy.generation !== undefined ? { policyGeneration: policy.generation } : {}) },
    },
  };
  return { runPolicy, added, removed, allowBlueprintReadPaths: { before: inForce.readPaths.allowBlueprintReadPaths, after: allow }, changed };
}

/** A run policy without what a resume may change: what must stay equal between the base and a resumed snapshot. */
function pinnedPart(policy: RunPolicy): unknown {
  const { granted: _g, allowBlueprintReadPaths: _a, resumed: _r, ...readPaths } = policy.readPaths;
  return { ...policy, readPaths };
}

/**
 * Why a resumed snapshot may not replace the base (undefined: it may): anything but the grants differs. The
 * sidecar checks this itself, so a snapshot that also loosened a permission, a floor or a rule is never enforced.
 */
export function checkResumedRunPolicy(base: RunPolicy, resumed: RunPolicy): string | undefined {
  if (resumed.readPaths.resumed === undefined) return "it is not marked as a resumed snapshot (readPaths.resumed)";
  const a = pinnedPart(base) as Record<string, unknown>;
  const b = pinnedPart(resumed) as Record<string, unknown>;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (buildCanonicalJson(a[key]) !== buildCanonicalJson(b[key])) return `it changes '${key}', which a resume never re-resolves (only readPaths.granted and readPaths.allowBlueprintReadPaths)`;
  }
  return undefined;
}

/** Parse a resumed snapshot's run policy (the ConfigMap's `run-policy.json`). */
export function parseResumedRunPolicy(text: string | undefined): { ok: true; value: RunPolicy } | { ok: false; message: string } {
  let json: unknown;
  try {
    json = JSON.parse(text ?? "null");
  } catch (err) {
    return { ok: false, message: `${RESUME_SNAPSHOT_KEY.runPolicy}: not JSON: ${(err as Error).message}` };
  }
  const parsed = RunPolicySchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, message: `${RESUME_SNAPSHOT_KEY.runPolicy}: ${issue ? `${issue.path.join(".") || "(root)"}: ${issue.message}` : "invalid"}` };
  }
  return { ok: true, value: parsed.data };
}

/** The data of a resumed snapshot: stable JSON, so the same resume is the same bytes. */
export function buildResumeSnapshotData(runPolicy: RunPolicy, record: ResumeRecord): Record<string, string> {
  return {
    [RESUME_SNAPSHOT_KEY.runPolicy]: `${JSON.stringify(runPolicy, null, 2)}\n`,
    [RESUME_SNAPSHOT_KEY.resume]: `${JSON.stringify(record, null, 2)}\n`,
  };
}

/**
 * The immutable ConfigMap of the `record.sequence`-th resumed snapshot. Owned by the Run but not as its
 * controller, so the pruning of children no longer desired leaves it alone; garbage collection takes it with the
 * Run. Ownership proves nothing here (anyone may write an owner reference): the controller accepts only the bytes
 * it computed, and the sidecar only the bytes whose digest the controller put in the Run's status.
 */
export function buildResumeConfigMap(run: RunRef, agent: string, runPolicy: RunPolicy, record: ResumeRecord): KubeObject {
  const meta = buildChildMeta(run, agent, { name: buildResumeSnapshotName(run.name, record.sequence), component: COMPONENT.policy });
  meta.ownerReferences = (meta.ownerReferences ?? []).map((r) => ({ ...r, controller: false }));
  return { apiVersion: "v1", kind: "ConfigMap", metadata: meta, immutable: true, data: buildResumeSnapshotData(runPolicy, record) };
}
