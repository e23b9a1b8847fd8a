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
import type { DecisionSourceName } from "../../api/decision-sources.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { isSameStatus } from "../conditions.ts";
import { computeEffectivePolicy, type PolicyState } from "../policy/policy-state.ts";
import type { Resumed } from "./run-status.ts";

/** The gate-decision count (status.gateDecisions, written by the sidecar) of reads the read-path fence refused. */
const READ_PATH_REFUSALS: DecisionSourceName = "read_path";
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

/**
 * Answer the Run's resume request, if it has a new one: the record to write in `status.resume` (the previous one
 * when there is nothing new to answer). A resumed snapshot is created once (create, never update) and accepted only
 * when its bytes are those computed here, so a ConfigMap planted under its name is refused, not enforced.
 */
export async function answerResume(deps: ResumeDeps, run: ResumeRun): Promise<RunResumeStatus | undefined> {
  const prev = run.status?.resume;
  const token = run.annotations?.[RUN_ANNOTATION.resume];
  if (token === undefined || token === prev?.token) return prev;
  if (token.length > MAX_TOKEN || token.length === 0) return answer({ prev, token: token.slice(0, MAX_TOKEN), nowIso: run.nowIso }, "Refused", `the ${RUN_ANNOTATION.resume} value must be 1 to ${MAX_TOKEN} characters`);
  const req: ResumeRequest = { prev, token, nowIso: run.nowIso };
  const basis = await readResumeBasis(deps, run);
  if ("refused" in basis) return answer(req, "Refused", basis.refused);
  const { policy, inForce } = basis;
  const sequence = (prev?.sequence ?? 0) + 1;
  const grants = computeResumedGrants(run.snapshot.runPolicy, inForce, policy, sequence);
  const generation = policy.generation !== undefined ? { policyGeneration: policy.generation } : {};
  if (!grants.changed) {
    return answer(req, "Unchanged", `${describePolicy(policy.generation)} grants this run exactly the read paths it already has (${inForce.readPaths.granted.length} entries); nothing changed`, { ...generation, added: [], removed: [] });
  }
  if (sequence > MAX_RESUME_SNAPSHOTS) return answer(req, "Refused", `the run was resumed ${MAX_RESUME_SNAPSHOTS} times already, the most a Run may be; start a new Run`);
  const record: ResumeRecord = { sequence, token, ...generation, added: grants.added, removed: grants.removed, allowBlueprintReadPaths: grants.allowBlueprintReadPaths };
  return pinResumedSnapshot(deps, run, req, { record, runPolicy: grants.runPolicy, volumes: policy.spec.readPaths.volumes ?? [] });
}

/** Creates the resumed snapshot once and answers Resumed, or Refused when what holds its name is not exactly it. */
async function pinResumedSnapshot(deps: ResumeDeps, run: ResumeRun, req: ResumeRequest, resumed: { record: ResumeRecord; runPolicy: RunPolicy; volumes: Parameters<typeof computeReadPathVolumes>[0] }): Promise<RunResumeStatus> {
  const { record, runPolicy } = resumed;
  const desired = buildResumeConfigMap(run.ref, run.snapshot.controller.agent.name, runPolicy, record);
  const name = buildResumeSnapshotName(run.ref.name, record.sequence);
  const existing = await deps.writer.createOrGet(desired) as ConfigMapObject;
  if (!isSameStatus(existing.data, buildResumeSnapshotData(runPolicy, record))) {
    return answer(req, "Refused", `ConfigMap '${name}' exists and is not the snapshot this resume computed; delete it and resume again`);
  }
  const text = existing.data![RESUME_SNAPSHOT_KEY.runPolicy]!;
  const unbacked = unbackedGrants(run, record.added, resumed.volumes);
  return answer(req, "Resumed", describeChange(record, unbacked), {
    sequence: record.sequence, snapshot: name, snapshotSha256: computeSnapshotSha256(text),
    ...(record.policyGeneration !== undefined ? { policyGeneration: record.policyGeneration } : {}), added: record.added, removed: record.removed,
  });
}

/** What a resume re-resolves against and from: the effective policy and the run policy in force; or why it may not. */
async function readResumeBasis(deps: ResumeDeps, run: ResumeRun): Promise<{ policy: NonNullable<ReturnType<typeof computeEffectivePolicy>>; inForce: RunPolicy } | { refused: string }> {
  const refused = decideResumeRefusal(run.status);
  if (refused) return { refused };
  const policy = computeEffectivePolicy(deps.policy());
  if (!policy) return { refused: "the LeviathPolicy is invalid and no earlier generation was valid; nothing to re-resolve against" };
  const inForce = await readInForce(deps, run);
  if (!inForce.ok) return { refused: inForce.message };
  return { policy, inForce: inForce.value };
}

/** The resume part of a Run's status for this pass: the record, and the read paths in force once a resume moved them. */
export async function resolveResume(deps: ResumeDeps, run: ResumeRun): Promise<Resumed> {
  const record = await answerResume(deps, run);
  if (record?.snapshot === undefined) return { record };
  const inForce = await readInForce(deps, { ...run, status: { ...run.status, resume: record } });
  return { record, ...(inForce.ok ? { readPaths: inForce.value.readPaths } : {}) };
}
