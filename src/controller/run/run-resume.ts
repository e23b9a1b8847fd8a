// Resuming a Run: a new value of its `leviath.dev/resume` annotation asks the controller to re-resolve the run's
// read-path grants against the current LeviathPolicy (and nothing else), write the result as a new immutable
// snapshot, and say in `status.resume` what changed. Who may set the annotation is decided at admission (the
// chart's `<release>-resume` policy: `update` on the pseudo-subresource `runs/resume`), not here. The pass reads the
// resumed snapshot in force (`readResumedSnapshot`), answers purely (`resolveResume`: the record, and the snapshot
// to create when the answer makes one), and the applier creates it once and says whether what holds its name is it.
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
} from "../../sandbox/resume-snapshot.ts";
import type { RunSnapshot } from "../../sandbox/run-snapshot.ts";
import type { DecisionSourceName } from "../../api/decision-sources.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { isSameStatus } from "../conditions.ts";
import { computeEffectivePolicy, type PolicyState } from "../leviath-policy/policy-state.ts";
import type { Resumed } from "./run-status.ts";

/** The gate-decision count (status.gateDecisions, written by the sidecar) of reads the read-path fence refused. */
const READ_PATH_REFUSALS: DecisionSourceName = "read_path";
/** Longest resume token kept (status.resume.token). */
const MAX_TOKEN = 253;

/** The Run as the resume step sees it, with the policy of the pass and the resumed snapshot in force as read. */
export interface ResumeRun {
  ref: RunRef;
  annotations: Readonly<Record<string, string>> | undefined;
  status: RunStatus | undefined;
  snapshot: RunSnapshot;
  nowIso: string;
  policy: PolicyState;
  /** The ConfigMap `status.resume.snapshot` names, as read (absent: none named, or not found). */
  inForce?: ConfigMapObject | undefined;
  /** The resumed snapshot this pass would create is held by something else (the applier's answer). */
  conflict?: boolean | undefined;
}

/** A resumed snapshot to create (once), and the answer when what holds its name is not it. */
export interface ResumeWrite {
  readonly configMap: KubeObject;
  readonly refused: RunResumeStatus;
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

/** The request being answered: the previous record, the new token and the time of the pass. */
interface ResumeRequest {
  readonly prev: RunResumeStatus | undefined;
  readonly token: string;
  readonly nowIso: string;
}

/** The answer, keeping the snapshot pointer of the previous record unless the answer moves it. */
function answer(req: ResumeRequest, outcome: RunResumeStatus["outcome"], message: string, extra: Partial<RunResumeStatus> = {}): RunResumeStatus {
  const { prev } = req;
  return {
    token: req.token, outcome, message, at: req.nowIso,
    sequence: prev?.sequence ?? 0,
    ...(prev?.snapshot !== undefined ? { snapshot: prev.snapshot } : {}),
    ...(prev?.snapshotSha256 !== undefined ? { snapshotSha256: prev.snapshotSha256 } : {}),
    ...extra,
  };
}

/** Reads the resumed snapshot the Run's status names (the cache first, then live), if it names one. */
export async function readResumedSnapshot(deps: { cache: ClusterCache; writer: ClusterWriter }, ref: RunRef, status: RunStatus | undefined): Promise<ConfigMapObject | undefined> {
  const name = status?.resume?.snapshot;
  if (name === undefined) return undefined;
  return (deps.cache.get("configMap", ref.namespace, name) ?? await deps.writer.read("configMap", ref.namespace, name)) as ConfigMapObject | undefined;
}

/** The run policy the run enforces now: the base, or the resumed snapshot `record` names (its digest checked). */
function readInForce(run: Pick<ResumeRun, "snapshot">, record: RunResumeStatus | undefined, cm: ConfigMapObject | undefined): { ok: true; value: RunPolicy } | { ok: false; message: string } {
  if (record?.snapshot === undefined) return { ok: true, value: run.snapshot.runPolicy };
  const text = cm?.metadata.name === record.snapshot ? cm.data?.[RESUME_SNAPSHOT_KEY.runPolicy] : undefined;
  if (text === undefined || computeSnapshotSha256(text) !== record.snapshotSha256) return { ok: false, message: `ConfigMap '${record.snapshot}' no longer holds the snapshot recorded in status.resume` };
  return parseResumedRunPolicy(text);
}

/** New grants that no read-path volume of this run's pods backs, though a policy volume would: they need a new Run. */
function unbackedGrants(run: ResumeRun, added: readonly string[], volumes: Parameters<typeof computeReadPathVolumes>[0]): string[] {
  const mounted = new Set(run.snapshot.controller.readPathVolumes.map((v) => v.path));
  return added.filter((g) => computeReadPathVolumes(volumes, [g]).some((v) => !mounted.has(v.path)));
}

/** The policy re-resolved against, in words. */
const describePolicy = (generation: number | undefined): string => generation !== undefined ? `LeviathPolicy generation ${generation}` : "the default policy";

function describeChange(record: ResumeRecord, unbacked: readonly string[]): string {
  const parts = [
    ...(record.added.length ? [`added ${record.added.map((g) => `'${g}'`).join(", ")}`] : []),
    ...(record.removed.length ? [`removed ${record.removed.map((g) => `'${g}'`).join(", ")}`] : []),
    ...(record.allowBlueprintReadPaths.before !== record.allowBlueprintReadPaths.after ? [`allowBlueprintReadPaths ${record.allowBlueprintReadPaths.before} -> ${record.allowBlueprintReadPaths.after}`] : []),
  ];
  const generation = describePolicy(record.policyGeneration);
  const note = unbacked.length
    ? `; ${unbacked.map((g) => `'${g}'`).join(", ")} lie on a policy volume this run's pod does not mount, so reads there find nothing until a new Run`
    : "";
  return `read-path grants re-resolved against ${generation}: ${parts.join("; ")}${note}`;
}

/** The answer to a resume request: the record, and the resumed snapshot to create when the answer makes one. */
interface ResumeAnswer {
  readonly record: RunResumeStatus | undefined;
  readonly write?: ResumeWrite & { readonly data: Record<string, string> };
}

/**
 * Answer the Run's resume request, if it has a new one: the record to write in `status.resume` (the previous one
 * when there is nothing new to answer); pure. A resumed snapshot is created once (create, never update) and accepted
 * only when its bytes are those computed here, so a ConfigMap planted under its name is refused, not enforced.
 */
export function answerResume(run: ResumeRun): ResumeAnswer {
  const prev = run.status?.resume;
  const token = run.annotations?.[RUN_ANNOTATION.resume];
  if (token === undefined || token === prev?.token) return { record: prev };
  if (token.length > MAX_TOKEN || token.length === 0) return { record: answer({ prev, token: token.slice(0, MAX_TOKEN), nowIso: run.nowIso }, "Refused", `the ${RUN_ANNOTATION.resume} value must be 1 to ${MAX_TOKEN} characters`) };
  const req: ResumeRequest = { prev, token, nowIso: run.nowIso };
  const basis = readResumeBasis(run);
  if ("refused" in basis) return { record: answer(req, "Refused", basis.refused) };
  const { policy, inForce } = basis;
  const sequence = (prev?.sequence ?? 0) + 1;
  const grants = computeResumedGrants(run.snapshot.runPolicy, inForce, policy, sequence);
  const generation = policy.generation !== undefined ? { policyGeneration: policy.generation } : {};
  if (!grants.changed) {
    return { record: answer(req, "Unchanged", `${describePolicy(policy.generation)} grants this run exactly the read paths it already has (${inForce.readPaths.granted.length} entries); nothing changed`, { ...generation, added: [], removed: [] }) };
  }
  if (sequence > MAX_RESUME_SNAPSHOTS) return { record: answer(req, "Refused", `the run was resumed ${MAX_RESUME_SNAPSHOTS} times already, the most a Run may be; start a new Run`) };
  const record: ResumeRecord = { sequence, token, ...generation, added: grants.added, removed: grants.removed, allowBlueprintReadPaths: grants.allowBlueprintReadPaths };
  return pinResumedSnapshot(run, req, { record, runPolicy: grants.runPolicy, volumes: policy.spec.readPaths.volumes ?? [] });
}

/** The resumed snapshot to create once, answered Resumed, or Refused when what holds its name is not exactly it. */
function pinResumedSnapshot(run: ResumeRun, req: ResumeRequest, resumed: { record: ResumeRecord; runPolicy: RunPolicy; volumes: Parameters<typeof computeReadPathVolumes>[0] }): ResumeAnswer {
  const { record, runPolicy } = resumed;
  const name = buildResumeSnapshotName(run.ref.name, record.sequence);
  const refused = answer(req, "Refused", `ConfigMap '${name}' exists and is not the snapshot this resume computed; delete it and resume again`);
  if (run.conflict === true) return { record: refused };
  const data = buildResumeSnapshotData(runPolicy, record);
  const configMap = buildResumeConfigMap(run.ref, run.snapshot.controller.agent.name, runPolicy, record);
  const text = data[RESUME_SNAPSHOT_KEY.runPolicy]!;
  const unbacked = unbackedGrants(run, record.added, resumed.volumes);
  return {
    record: answer(req, "Resumed", describeChange(record, unbacked), {
      sequence: record.sequence, snapshot: name, snapshotSha256: computeSnapshotSha256(text),
      ...(record.policyGeneration !== undefined ? { policyGeneration: record.policyGeneration } : {}), added: record.added, removed: record.removed,
    }),
    write: { configMap, data, refused },
  };
}

/** Whether what holds the resumed snapshot's name (as the create returned it) is exactly the snapshot to create. */
export function isResumedSnapshot(write: ResumeWrite, existing: KubeObject): boolean {
  return isSameStatus((existing as ConfigMapObject).data, (write.configMap as ConfigMapObject).data);
}

/** What a resume re-resolves against and from: the effective policy and the run policy in force; or why it may not. */
function readResumeBasis(run: ResumeRun): { policy: NonNullable<ReturnType<typeof computeEffectivePolicy>>; inForce: RunPolicy } | { refused: string } {
  const refused = decideResumeRefusal(run.status);
  if (refused) return { refused };
  const policy = computeEffectivePolicy(run.policy);
  if (!policy) return { refused: "the LeviathPolicy is invalid and no earlier generation was valid; nothing to re-resolve against" };
  const inForce = readInForce(run, run.status?.resume, run.inForce);
  if (!inForce.ok) return { refused: inForce.message };
  return { policy, inForce: inForce.value };
}

/**
 * The resume part of a Run's status for this pass, pure: the record, the read paths in force once a resume moved
 * them, and the resumed snapshot to create when this pass answers a request with one.
 */
export function resolveResume(run: ResumeRun): Resumed & { write?: ResumeWrite | undefined } {
  const { record, write } = answerResume(run);
  if (record?.snapshot === undefined) return { record };
  // A snapshot created this pass is what it holds once accepted; one from before is what was read.
  const cm = write !== undefined ? { ...write.configMap, data: write.data } as ConfigMapObject : run.inForce;
  const inForce = readInForce(run, record, cm);
  return { record, ...(inForce.ok ? { readPaths: inForce.value.readPaths } : {}), ...(write ? { write: { configMap: write.configMap, refused: write.refused } } : {}) };
}
