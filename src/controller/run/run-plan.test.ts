// planRun as tables of observation -> plan: each row is one observation of a Run pass (what run-gather.ts would
// read) and what the pass must do with it. Pure: no cluster, no clock but the observation's.
import { describe, expect, it } from "vitest";
import { AgentSpecSchema } from "../../api/agent.ts";
import { LeviathPolicySpecSchema, type LeviathPolicySpecInput } from "../../api/leviath-policy.ts";
import { RunSpecSchema } from "../../api/run.ts";
import type { RunStatus } from "../../api/status.ts";
import { computeSnapshotDataSha256 } from "../../io/snapshot-digest.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { DEFAULT_POD_SETTINGS } from "../../sandbox/pod-settings.ts";
import { buildPoolNames, buildPoolTemplate, computePoolHash } from "../../sandbox/pool-pods.ts";
import { buildPolicyConfigMap } from "../../sandbox/run-objects.ts";
import { buildRunSnapshot, type RunSnapshot } from "../../sandbox/run-snapshot.ts";
import { RUN } from "../../sandbox/test-fixtures.ts";
import type { PolicyState } from "../leviath-policy/policy-state.ts";
import { ENFORCEMENT_UNCHECKED } from "./network-condition.ts";
import type { RunAnswers, RunPassObservation, RunWorld } from "./run-gather.ts";
import type { PinFacts } from "./run-pinning.ts";
import { NETWORK_REFUSAL_RECHECK_MS, planRun, type RunPlan } from "./run-plan.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
const OWNER = [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: RUN.name, uid: RUN.uid, controller: true }];
const BOXED = { image: "r:1", sandbox: { kind: "container", image: "alpine:3", network: false } };
const ALLOW = { ceilings: { runtimeImages: ["r:1"] } };

const policyOf = (spec: LeviathPolicySpecInput): PolicyState => ({ kind: "valid", spec: LeviathPolicySpecSchema.parse(spec), generation: 7 });
const agentOf = (spec: Record<string, unknown>, uid = "agent-uid"): KubeObject => ({ apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "notes", namespace: RUN.namespace, uid, generation: 3 }, spec } as KubeObject);
const child = (kind: string, name: string, extra: Record<string, unknown> = {}): KubeObject => ({ apiVersion: "v1", kind, metadata: { name, namespace: RUN.namespace, ownerReferences: OWNER }, ...extra } as KubeObject);

/** The snapshot a Run of `agent` pins under `policy`, and its ConfigMap as the controller wrote it. */
function pinned(agent: Record<string, unknown>, policy: LeviathPolicySpecInput): { snapshot: RunSnapshot; configMap: KubeObject & { data: Record<string, string> }; sha256: string } {
  const built = buildRunSnapshot({
    agent: { name: "notes", namespace: RUN.namespace, generation: 3, spec: AgentSpecSchema.parse(agent), written: agent },
    policy: { name: "cluster", generation: 7, spec: LeviathPolicySpecSchema.parse(policy) },
    run: RunSpecSchema.parse({ agentRef: { name: "notes" } }),
  });
  if (!built.ok) throw new Error(built.message);
  const configMap = buildPolicyConfigMap(RUN, built.value) as KubeObject & { data: Record<string, string> };
  const sha256 = computeSnapshotDataSha256(configMap.data);
  return { snapshot: { ...built.value, sha256 }, configMap, sha256 };
}

const WORLD: RunWorld = { owned: [], networkEnforcement: ENFORCEMENT_UNCHECKED, namespaceLabels: {}, runtimeClasses: new Set(), poolSandboxPods: [] };

interface Row {
  spec?: Record<string, unknown>;
  status?: RunStatus;
  annotations?: Record<string, string>;
  policy?: LeviathPolicySpecInput;
  pin?: PinFacts;
  world?: Partial<RunWorld>;
  owned?: KubeObject[];
  approvalReader?: KubeObject[];
  answers?: RunAnswers;
  warmPools?: boolean;
  at?: number;
}

function observe(row: Row): RunPassObservation {
  const at = row.at ?? T0;
  const parsed = RunSpecSchema.safeParse(row.spec ?? { agentRef: { name: "notes" } });
  const owned = row.owned ?? [];
  return {
    run: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN.name, namespace: RUN.namespace, uid: RUN.uid, generation: 1, resourceVersion: "5", ...(row.annotations ? { annotations: row.annotations } : {}) }, ...(row.status ? { status: row.status } : {}) },
    ref: RUN, generation: 1, nowMs: at, nowIso: iso(at),
    isOver: ["Succeeded", "Failed", "Cancelled"].includes(row.status?.phase ?? "Pending"),
    spec: parsed.success ? { ok: true, value: parsed.data } : { ok: false, issue: parsed.error.issues[0] },
    policy: policyOf(row.policy ?? ALLOW), settings: DEFAULT_POD_SETTINGS, warmPools: row.warmPools ?? false,
    owned, approvalReader: row.approvalReader ?? [],
    ...(row.pin ? { pin: row.pin } : {}),
    ...(row.pin && row.world !== undefined ? { world: { ...WORLD, owned, ...row.world } } : {}),
    answers: row.answers ?? {},
  };
}

const kinds = (objs: readonly KubeObject[]) => objs.map((o) => `${o.kind}/${o.metadata.name}`);
const reasonOf = (plan: RunPlan, type = "PolicyResolved") => ("status" in plan ? plan.status?.conditions?.find((c) => c.type === type)?.reason : undefined);

const BOX = pinned(BOXED, ALLOW);
const STARTED: RunStatus = { phase: "Pending", agent: { name: "notes", generation: 3 }, snapshotSha256: BOX.sha256, startedAt: iso(T0) };
const FRESH: PinFacts = { pinnedBefore: false, cached: undefined, agent: agentOf(BOXED), workspace: { heldBy: [], existing: undefined }, mcpSecrets: new Map() };

describe("planRun: before a snapshot", () => {
  const rows: { name: string; row: Row; kind: RunPlan["kind"]; phase?: string; reason?: string; deletes?: string[]; requeueAfterMs?: number }[] = [
    { name: "an invalid spec fails the Run, naming the field, and deletes nothing", row: { spec: { agentRef: {} } }, kind: "blocked", phase: "Failed", reason: "InvalidSpec", deletes: [] },
    { name: "an invalid spec of a finished Run changes nothing", row: { spec: { agentRef: {} }, status: { phase: "Succeeded" } }, kind: "none" },
    { name: "a finished Run past its TTL is deleted", row: { spec: { agentRef: { name: "notes" }, ttlSecondsAfterFinished: 60 }, status: { phase: "Succeeded", completedAt: iso(T0 - 61_000) } }, kind: "delete-run" },
    { name: "a missing Agent: Pending, nothing deleted", row: { pin: { pinnedBefore: false, cached: undefined, agent: undefined } }, kind: "blocked", phase: "Pending", reason: "AgentNotFound", deletes: [] },
    {
      name: "a LeviathPolicy on the server that the cache does not show yet: Pending, looked at again in a second, never pinned to upstream's defaults",
      row: { pin: { ...FRESH, policyNotCached: true } }, kind: "blocked", phase: "Pending", reason: "PolicyNotCached", deletes: [], requeueAfterMs: 1000,
    },
    {
      name: "a pinned snapshot gone: Failed, and what may run or act for it deleted (the approval reader after)",
      row: { status: STARTED, pin: { pinnedBefore: true, configMap: undefined }, owned: [child("Pod", "digest-1-engine"), child("ServiceAccount", "digest-1-sidecar"), child("PersistentVolumeClaim", "digest-1-workspace")], approvalReader: [child("Role", "digest-1-approval-reader")] },
      kind: "blocked", phase: "Failed", reason: "PolicySnapshotInvalid", deletes: ["Pod/digest-1-engine", "ServiceAccount/digest-1-sidecar"],
    },
    {
      name: "a finished Run whose snapshot is gone keeps its status; only what must not run again goes, until its TTL",
      row: { spec: { agentRef: { name: "notes" }, ttlSecondsAfterFinished: 60 }, status: { ...STARTED, phase: "Succeeded", completedAt: iso(T0) }, pin: { pinnedBefore: true, configMap: undefined }, owned: [child("Pod", "digest-1-engine"), child("Role", "digest-1-sidecar")] },
      kind: "blocked", deletes: ["Role/digest-1-sidecar"], requeueAfterMs: 60_000,
    },
    {
      name: "a ConfigMap under the name that is not the Run's fails it",
      row: { pin: { ...FRESH, cached: { ...BOX.configMap, metadata: { ...BOX.configMap.metadata, ownerReferences: [] } } } },
      kind: "blocked", phase: "Failed", reason: "PolicySnapshotInvalid",
    },
  ];
  for (const { name, row, kind, phase, reason, deletes, requeueAfterMs } of rows) {
    it(name, () => {
      const plan = planRun(observe(row));
      expect(plan.kind).toBe(kind);
      if (phase !== undefined) expect("status" in plan ? plan.status?.phase : undefined).toBe(phase);
      if (reason !== undefined) expect(reasonOf(plan)).toBe(reason);
      if (deletes !== undefined && plan.kind === "blocked") expect(kinds(plan.deletes)).toEqual(deletes);
      if (requeueAfterMs !== undefined) expect("requeueAfterMs" in plan ? plan.requeueAfterMs : undefined).toBe(requeueAfterMs);
    });
  }
});

describe("planRun: the pass that pins", () => {
  it("writes the snapshot with the children (the pod's prerequisites beside it), and one Pending status that names it", () => {
    const plan = planRun(observe({ pin: FRESH, world: {} }));
    expect(plan.kind).toBe("run");
    if (plan.kind !== "run") return;
    expect(plan.pin?.metadata.name).toBe("digest-1-policy");
    expect((plan.pin as { data?: unknown }).data).toEqual(BOX.configMap.data);
    expect(kinds(plan.children.desired)).toContain("Pod/digest-1-engine");
    expect(plan.status).toMatchObject({ phase: "Pending", snapshotSha256: BOX.sha256, agent: { name: "notes", generation: 3 } });
    expect(plan.requeueAfterMs).toBeGreaterThan(0);
  });

  it("stops on a refused snapshot as a value: Failed, and the prerequisites it wrote deleted though the cache has none", () => {
    const written = [child("ServiceAccount", "digest-1-sidecar"), child("NetworkPolicy", "digest-1-isolate")];
    const refused = { blocked: true as const, phase: "Failed" as const, reason: "PolicySnapshotInvalid", message: "ConfigMap 'digest-1-policy' exists and is not the snapshot this Run resolved" };
    const plan = planRun(observe({ pin: FRESH, world: {}, answers: { pin: { refused, written } } }));
    expect(plan).toMatchObject({ kind: "blocked", status: { phase: "Failed", message: refused.message } });
    expect(plan.kind === "blocked" && kinds(plan.deletes)).toEqual(["ServiceAccount/digest-1-sidecar", "NetworkPolicy/digest-1-isolate"]);
  });

  it("asks for the snapshot's answer first where the next step needs it, and then plans with it", () => {
    const creds = { ...BOXED, sandbox: undefined, credentials: [{ secretName: "key" }] };
    const onHost: Row = { policy: ALLOW, pin: { ...FRESH, agent: agentOf(creds) } };
    expect(planRun(observe(onHost)).kind).toBe("pin-first");
    expect(planRun(observe({ ...onHost, answers: { pin: true } }))).toMatchObject({ kind: "blocked", status: { phase: "Failed", message: expect.stringContaining("credentials reach the agent container") } });
    const refuse = { ...ALLOW, networkEnforcement: { verify: true, namespace: "leviath-probe", onUnverified: "refuse" as const } };
    const network: Row = { policy: refuse, pin: FRESH, world: {} };
    expect(planRun(observe(network)).kind).toBe("pin-first");
    expect(planRun(observe({ ...network, answers: { pin: true } }))).toMatchObject({ kind: "blocked", deletes: [], status: { phase: "Pending" }, requeueAfterMs: NETWORK_REFUSAL_RECHECK_MS });
    expect(reasonOf(planRun(observe({ ...network, answers: { pin: true } })))).toBe("NetworkEnforcementNotVerified");
  });
});

describe("planRun: a pinned Run", () => {
  const pinnedFacts: PinFacts = { pinnedBefore: true, configMap: BOX.configMap };
  const engine = (phase: string) => child("Pod", "digest-1-engine", { status: { phase, conditions: [{ type: "Ready", status: phase === "Running" ? "True" : "False" }] } });

  it("writes no snapshot again, and keeps its children", () => {
    const plan = planRun(observe({ status: STARTED, pin: pinnedFacts, world: {} }));
    expect(plan.kind === "run" && plan.pin).toBeUndefined();
    expect(plan.kind === "run" && plan.children.live).toBe(true);
  });

  it("that ended: Succeeded once, its approval reader dropped, its TTL the requeue", () => {
    const reader = [child("Role", "digest-1-approval-reader")];
    const plan = planRun(observe({ spec: { agentRef: { name: "notes" }, ttlSecondsAfterFinished: 30 }, status: STARTED, pin: pinnedFacts, owned: [engine("Succeeded")], approvalReader: reader, world: {} }));
    expect(plan).toMatchObject({ kind: "run", status: { phase: "Succeeded", completedAt: iso(T0) }, requeueAfterMs: 30_000 });
    expect(plan.kind === "run" && kinds(plan.dropReader)).toEqual(["Role/digest-1-approval-reader"]);
  });

  it("says a missing credential Secret as read this pass, and holds the engine pod back", () => {
    const creds = pinned({ ...BOXED, credentials: [{ secretName: "key" }] }, ALLOW);
    const plan = planRun(observe({ status: { ...STARTED, snapshotSha256: creds.sha256 }, pin: { pinnedBefore: true, configMap: creds.configMap }, world: { credentialSecrets: [undefined] } }));
    expect(reasonOf(plan, "CredentialsReady")).toBe("SecretNotFound");
    expect(plan.kind === "run" && kinds(plan.children.desired)).not.toContain("Pod/digest-1-engine");
  });

  it("restores a NetworkPolicy the server no longer holds, and says so", () => {
    const isolated = { ...STARTED, conditions: [{ type: "NetworkIsolated", status: "True" as const, reason: "NetworkPolicyApplied", message: "m", lastTransitionTime: iso(T0) }] };
    expect(reasonOf(planRun(observe({ status: isolated, pin: pinnedFacts, world: { networkPolicyFound: false } })), "NetworkIsolated")).toBe("NetworkPolicyRestored");
    expect(reasonOf(planRun(observe({ status: isolated, pin: pinnedFacts, world: { networkPolicyFound: true } })), "NetworkIsolated")).toBe("NetworkPolicyApplied");
  });

  it("answers a resume whose snapshot name something else holds as Refused, without writing it", () => {
    const waiting: Row = { status: { ...STARTED, phase: "WaitingInput" }, annotations: { "leviath.dev/resume": "t1" }, policy: { ...ALLOW, readPaths: { global: ["/data/**"] } }, pin: pinnedFacts, world: {} };
    const first = planRun(observe(waiting));
    expect(first.kind === "run" && first.resume?.configMap.metadata.name).toBe("digest-1-policy-r01");
    const again = planRun(observe({ ...waiting, answers: { resumeConflict: true } }));
    expect(again.kind === "run" && again.resume).toBeUndefined();
    expect(again.kind === "run" && again.status.resume).toMatchObject({ token: "t1", outcome: "Refused" });
  });

  it("is the same plan for the same observation", () => {
    const row: Row = { status: STARTED, pin: pinnedFacts, owned: [engine("Running")], world: {} };
    expect(planRun(observe(row))).toEqual(planRun(observe(row)));
  });
});

describe("planRun: warm pools", () => {
  const POOLED = { ...ALLOW, pools: [{ agent: `${RUN.namespace}/notes`, size: 1 }] };
  const pod = buildPoolNames("notes", "0a1b2c3d4e").pod;
  const hash = computePoolHash(buildPoolTemplate({ namespace: RUN.namespace, name: "notes", uid: "agent-uid" }, pinned(BOXED, POOLED).snapshot, LeviathPolicySpecSchema.parse(POOLED).pools[0]!), DEFAULT_POD_SETTINGS);
  const cold = pinned(BOXED, POOLED);
  const adoption = { agentUid: "agent-uid", pods: [{ name: pod, state: "ready" as const, hash, createdMs: 1, deleting: false }] };
  const row: Row = { warmPools: true, policy: POOLED, status: { ...STARTED, snapshotSha256: cold.sha256 }, pin: { pinnedBefore: true, configMap: cold.configMap }, world: { adoption } };

  it("claims the ready pool pod first, then binds the Run to it and takes over its objects", () => {
    expect(planRun(observe(row))).toEqual({ kind: "claim-first", claim: { agentKey: `${RUN.namespace}/notes`, agentUid: "agent-uid", candidates: [pod] } });
    const plan = planRun(observe({ ...row, answers: { claim: { pod } } }));
    expect(plan).toMatchObject({ kind: "run", status: { startedFrom: "pool", enginePod: pod }, takeOver: { pod } });
    expect(plan.kind === "run" && kinds(plan.children.desired)).not.toContain("Pod/digest-1-engine");
  });

  it("starts cold when every ready pod was claimed first, counting the miss", () => {
    const plan = planRun(observe({ ...row, answers: { claim: { lost: [pod] } } }));
    expect(plan).toMatchObject({ kind: "run", status: { startedFrom: "cold" }, missed: { reason: "claim-conflict" } });
    expect(plan.kind === "run" && kinds(plan.children.desired)).toContain("Pod/digest-1-engine");
  });

  it("starts cold with no ready pod made from what it pins", () => {
    expect(planRun(observe({ ...row, world: { adoption: { ...adoption, pods: [{ ...adoption.pods[0]!, hash: "other" }] } } }))).toMatchObject({ kind: "run", missed: { reason: "no-ready-pod" } });
  });
});
