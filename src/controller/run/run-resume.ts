// Resuming a Run: a new value of its `leviath.dev/resume` annotation asks the controller to re-resolve the run's
// read-path grants against the current LeviathPolicy (and nothing else), write the result as a new immutable
// snapshot, and say in `status.resume` what changed. Who may set the annotation is decided at admission (the
// chart's `<release>-resume` policy: `update` on the pseudo-subresource `runs/resume`), not here.
import { createHash } from "node:crypto";
import { RUN_ANNOTATION } from "../../api/constants.ts";
import type { RunPolicy } from "../../api/run-policy.ts";
import { TERMINAL_PHASES, type RunResumeStatus, type RunStatus } from "../../api/status.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { computeReadPathVolumes } from "../../sandbox/read-path-volumes.ts";
import type { RunRef } from "../../sandbox/names.ts";
import {
  buildResumeConfigMap, buildResumeSnapshotData, buildResumeSnapshotName, computeResumedGrants, MAX_RESUME_SNAPSHOTS,
  parseResumedRunPolicy, RESUME_SNAPSHOT_KEY, type ResumeRecord,
} from "../../sandbox/run-resume.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { isSameStatus } from "../conditions.ts";
import { computeEffectivePolicy, type PolicyState } from "../policy/policy-state.ts";
import type { Resumed } from "./run-status.ts";

/** The gate-decision count (status.gateDecisions, written by the sidecar) of reads the read-path fence refused. */
const READ_PATH_REFUSALS = "read_path";
/** Longest resume token kept (status.resume.token). */
const MAX_TOKEN = 253;

/** What answering a resume request needs. */
export interface ResumeDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  policy: () => PolicyState;
}

/** The Run as the resume step sees it. */
export interface ResumeRun {
  ref: RunRef;
  annotations: Readonly<Record<string, string>> | undefined;
  status: RunStatus | undefined;
  snapshot: RunSnapshot;
  nowIso: string;
}

type ConfigMapObject = KubeObject & { data?: Record<string, string> };

/** SHA-256 (hex) of a snapshot's `run-policy.json`, as recorded in status and checked by the sidecar. */
export function computeSnapshotSha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Why this run may not be resumed now (undefined: it may). Only a run that waits, or had a read refused, may. */
export function decideResumeRefusal(status: RunStatus | undefined): string | undefined {
  const phase = status?.phase ?? "Pending";
  if (TERMINAL_PHASES.includes(phase)) return `the run is ${phase}: a finished run cannot be resumed; start a new Run`;
  const refusals = status?.gateDecisions?.[READ_PATH_REFUSALS] ?? 0;
  if (phase === "WaitingInput" || refusals > 0) return undefined;
  return `only a run that waits for input or had a read refused can be resumed; this one is ${phase} and no read was refused`;
}

/** The answer, keeping the snapshot pointer of the previous record unless the answer moves it. */
function answer(prev: RunResumeStatus | undefined, token: string, nowIso: string, outcome: RunResumeStatus["outcome"], message: string, extra: Partial<RunResumeStatus> = {}): RunResumeStatus {
  return {
    token, outcome, message, at: nowIso,
    sequence: prev?.sequence ?? 0,
    ...(prev?.snapshot !== undefined ? { snapshot: prev.snapshot } : {}),
    ...(prev?.snapshotSha256 !== undefined ? { snapshotSha256: prev.snapshotSha256 } : {}),
    ...extra,
  };
}

/** The run policy the run enforces now: the base, or the last resumed snapshot (its digest checked). */
export async function readInForce(deps: ResumeDeps, run: ResumeRun): Promise<{ ok: true; value: RunPolicy } | { ok: false; message: string }> {
  const prev = run.status?.resume;
  if (prev?.snapshot === undefined) return { ok: true, value: run.snapshot.runPolicy };
  const cm = (deps.cache.get("configMap", run.ref.namespace, prev.snapshot) ?? await deps.writer.read("configMap", run.ref.namespace, prev.snapshot)) as ConfigMapObject | undefined;
  const text = cm?.data?.[RESUME_SNAPSHOT_KEY.runPolicy];
  if (text === undefined || computeSnapshotSha256(text) !== prev.snapshotSha256) return { ok: false, message: `ConfigMap '${prev.snapshot}' no longer holds the snapshot recorded in status.resume` };
  return parseResumedRunPolicy(text);
}

/** New grants that no read-path volume of this run's pods backs, though a policy volume would: they need a new Run. */
function unbackedGrants(run: ResumeRun, added: readonly string[], volumes: Parameters<typeof computeReadPathVolumes>[0]): string[] {
  const mounted = new Set(run.snapshot.controller.readPathVolumes.map((v) => v.path));
  return added.filter((g) => computeReadPathVolumes(volumes, [g]).some((v) => !mounted.has(v.path)));
}

function describeChange(record: ResumeRecord, unbacked: readonly string[]): string {
  const parts = [
    ...(record.added.length ? [`added ${record.added.map((g) => `'${g}'`).join(", ")}`] : []),
    ...(record.removed.length ? [`removed ${record.removed.map((g) => `'${g}'`).join(", ")}`] : []),
    ...(record.allowBlueprintReadPaths.before !== record.allowBlueprintReadPaths.after ? [`allowBlueprintReadPaths ${record.allowBlueprintReadPaths.before} -> ${record.allowBlueprintReadPaths.after}`] : []),
  ];
  const generation = record.policyGeneration !== undefined ? `LeviathPolicy generation ${record.policyGeneration}` : "the default policy";
  const note = unbacked.length
    ? `; ${unbacked.map((g) => `'${g}'`).join(", ")} lie on a policy volume this run's pod does not mount, so reads there find nothing until a new Run`
    : "";
  return `read-path grants re-resolved against ${generation}: ${parts.join("; ")}${note}`;
}

/**
 * Answer the Run's resume request, if it has a new one: the record to write in `status.resume` (the previous one
 * when there is nothing new to answer). A resumed snapshot is created once (create, never update) and accepted only
 * when its bytes are those computed here, so a ConfigMap planted under its name is refused, not enforced.
 */
export async function answerResume(deps: ResumeDeps, run: ResumeRun): Promise<RunResumeStatus | undefined> {
  const prev = run.status?.resume;
  const token = run.annotations?.[RUN_ANNOTATION.resume];
  if (token === undefined || token === prev?.token) return prev;
  if (token.length > MAX_TOKEN || token.length === 0) return answer(prev, token.slice(0, MAX_TOKEN), run.nowIso, "Refused", `the ${RUN_ANNOTATION.resume} value must be 1 to ${MAX_TOKEN} characters`);
  const refused = decideResumeRefusal(run.status);
  if (refused) return answer(prev, token, run.nowIso, "Refused", refused);
  const policy = computeEffectivePolicy(deps.policy());
  if (!policy) return answer(prev, token, run.nowIso, "Refused", "the LeviathPolicy is invalid and no earlier generation was valid; nothing to re-resolve against");
  const inForce = await readInForce(deps, run);
  if (!inForce.ok) return answer(prev, token, run.nowIso, "Refused", inForce.message);
  const sequence = (prev?.sequence ?? 0) + 1;
  const grants = computeResumedGrants(run.snapshot.runPolicy, inForce.value, policy, sequence);
  const generation = policy.generation !== undefined ? { policyGeneration: policy.generation } : {};
  if (!grants.changed) {
    const at = policy.generation !== undefined ? `LeviathPolicy generation ${policy.generation}` : "the default policy";
    return answer(prev, token, run.nowIso, "Unchanged", `${at} grants this run exactly the read paths it already has (${inForce.value.readPaths.granted.length} entries); nothing changed`, { ...generation, added: [], removed: [] });
  }
  if (sequence > MAX_RESUME_SNAPSHOTS) return answer(prev, token, run.nowIso, "Refused", `the run was resumed ${MAX_RESUME_SNAPSHOTS} times already, the most a Run may be; start a new Run`);
  const record: ResumeRecord = { sequence, token, ...generation, added: grants.added, removed: grants.removed, allowBlueprintReadPaths: grants.allowBlueprintReadPaths };
  const desired = buildResumeConfigMap(run.ref, run.snapshot.controller.agent.name, grants.runPolicy, record);
  const name = buildResumeSnapshotName(run.ref.name, sequence);
  const existing = await deps.writer.createOrGet(desired) as ConfigMapObject;
  if (!isSameStatus(existing.data, buildResumeSnapshotData(grants.runPolicy, record))) {
    return answer(prev, token, run.nowIso, "Refused", `ConfigMap '${name}' exists and is not the snapshot this resume computed; delete it and resume again`);
  }
  const text = existing.data![RESUME_SNAPSHOT_KEY.runPolicy]!;
  const unbacked = unbackedGrants(run, grants.added, policy.spec.readPaths.volumes ?? []);
  return answer(prev, token, run.nowIso, "Resumed", describeChange(record, unbacked), {
    sequence, snapshot: name, snapshotSha256: computeSnapshotSha256(text), ...generation, added: grants.added, removed: grants.removed,
  });
}

/** The resume part of a Run's status for this pass: the record, and the read paths in force once a resume moved them. */
export async function resolveResume(deps: ResumeDeps, run: ResumeRun): Promise<Resumed> {
  const record = await answerResume(deps, run);
  if (record?.snapshot === undefined) return { record };
  const inForce = await readInForce(deps, { ...run, status: { ...run.status, resume: record } });
  return { record, ...(inForce.ok ? { readPaths: inForce.value.readPaths } : {}) };
}
