import { describe, expect, it } from "vitest";
import { LABEL } from "../api/constants.ts";
import { ANNOTATION } from "./names.ts";
import { DEFAULT_POD_SETTINGS } from "./pod-settings.ts";
import { buildEnginePod } from "./pods.ts";
import { buildAdoptedObject, buildAnnouncedPod, buildPoolPod, isAnnounced, buildPoolPodPrerequisites, buildPoolRunIdentity, computePoolHash, listAdoptedObjects, POOL_STATE, type PoolTemplate } from "./pool-pods.ts";
import { buildRunChildren, buildWorkspaceMount } from "./run-children.ts";
import { computeSandboxPlan } from "./sandbox-plan.ts";
import { RUN, snapshotOf } from "./test-fixtures.ts";

const AGENT = { namespace: "team-a", name: "notes", uid: "agent-uid-1" };
const DATA = { path: "/data/shared", readOnly: true, volume: { persistentVolumeClaim: { claimName: "shared" } } };
const TEMPLATE: PoolTemplate = { agent: AGENT, image: "registry.test/runtime:1", readPathVolumes: [DATA] };

const pod = buildPoolPod(TEMPLATE, "0a1b2c3d4e", DEFAULT_POD_SETTINGS);
const sidecar = pod.spec.initContainers![0]!;
const agent = pod.spec.containers[0]!;

describe("a pool pod before it is bound", () => {
  it("holds no task, no run policy, no credential, no Secret and no ConfigMap of any Run", () => {
    const sources = pod.spec.volumes.map((v) => Object.keys(v).filter((k) => k !== "name")[0]);
    expect(sources.sort()).toEqual(["emptyDir", "emptyDir", "emptyDir", "emptyDir", "emptyDir", "persistentVolumeClaim", "persistentVolumeClaim", "projected"]);
    expect(JSON.stringify(pod)).not.toMatch(/secretRef|"secret"|run-policy\.json|runtime\.json|LEVIATH_RUN"/);
    expect(agent.envFrom).toBeUndefined();
    expect(agent.env?.map((e) => e.name)).not.toContain("LEVIATH_RUNTIME_CONFIG");
  });

  it("runs the sidecar unbound and the runtime behind its binding", () => {
    expect(sidecar.args).toContain("--pool");
    expect(sidecar.args).not.toContain("--run-policy");
    expect(sidecar.args).not.toContain("--run");
    // Ours start with the pod, held on their binding (they read LEVIATH_BINDING_FD).
    expect(agent.command).toEqual(["leviath", "bound-exec", "--held", "--", "leviath", "agent"]);
    const adapter = buildPoolPod({ ...TEMPLATE, runtimeKind: "claude-code" }, "0a1b2c3d4e", DEFAULT_POD_SETTINGS);
    expect(adapter.spec.containers[0]!.command).toEqual(["leviath", "bound-exec", "--held", "--", "leviath", "adapter", "claude-code"]);
    // The pool's command, for an image whose entrypoint is another program (a pod cannot read its image's): started
    // at its binding unless the pool says it takes its binding held.
    const own = buildPoolPod({ ...TEMPLATE, command: ["node", "/opt/runtime.mjs"] }, "0a1b2c3d4e", DEFAULT_POD_SETTINGS);
    expect(own.spec.containers[0]!.command).toEqual(["leviath", "bound-exec", "--", "node", "/opt/runtime.mjs"]);
    const held = buildPoolPod({ ...TEMPLATE, command: ["node", "/opt/runtime.mjs"], runtimeStart: "with-pod" }, "0a1b2c3d4e", DEFAULT_POD_SETTINGS);
    expect(held.spec.containers[0]!.command).toEqual(["leviath", "bound-exec", "--held", "--", "node", "/opt/runtime.mjs"]);
    const late = buildPoolPod({ ...TEMPLATE, runtimeStart: "at-binding" }, "0a1b2c3d4e", DEFAULT_POD_SETTINGS);
    expect(late.spec.containers[0]!.command).toEqual(["leviath", "bound-exec", "--", "leviath", "agent"]);
  });

  it("mounts the Agent's read-path volumes and the token in the sidecar alone", () => {
    expect(sidecar.volumeMounts.map((m) => m.mountPath)).toEqual(expect.arrayContaining(["/data/shared", "/var/run/secrets/kubernetes.io/serviceaccount"]));
    expect(agent.volumeMounts.map((m) => m.mountPath).sort()).toEqual(["/etc/leviath/runtime", "/run/leviath-runtime", "/tmp", "/var/run/leviath/credentials", "/workspace"]);
  });

  it("keeps a cold engine pod's hardening, container by container", () => {
    const snapshot = snapshotOf({ image: "registry.test/runtime:1", credentials: [{ secretName: "model-key" }] }, { ceilings: { runtimeImages: ["registry.test/runtime:1"] } });
    const cold = buildEnginePod(RUN, snapshot, buildWorkspaceMount(RUN, snapshot), DEFAULT_POD_SETTINGS);
    const pick = (p: typeof pod) => ({ ...p.spec, initContainers: undefined, containers: undefined, volumes: undefined, serviceAccountName: undefined });
    expect(pick(pod)).toEqual(pick(cold));
    expect(sidecar.securityContext).toEqual(cold.spec.initContainers![0]!.securityContext);
    expect(agent.securityContext).toEqual(cold.spec.containers[0]!.securityContext);
    expect([sidecar.resources, agent.resources]).toEqual([cold.spec.initContainers![0]!.resources, cold.spec.containers[0]!.resources]);
    expect(sidecar.restartPolicy).toBe("Always");
  });

  it("is labelled ready in its pool, owned by the Agent, and hashed by what it was made from", () => {
    expect(pod.metadata.name).toBe("notes-pool-0a1b2c3d4e");
    expect(pod.metadata.labels).toMatchObject({ [LABEL.pool]: "notes", [LABEL.poolState]: POOL_STATE.ready, [LABEL.component]: "engine" });
    expect(pod.metadata.labels?.[LABEL.run]).toBeUndefined();
    expect(pod.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: "Agent", name: "notes", uid: "agent-uid-1", controller: true })]);
    const hash = pod.metadata.annotations?.[ANNOTATION.poolHash];
    expect(hash).toBe(computePoolHash(TEMPLATE, DEFAULT_POD_SETTINGS));
    expect(computePoolHash({ ...TEMPLATE, image: "registry.test/runtime:2" }, DEFAULT_POD_SETTINGS)).not.toBe(hash);
    expect(computePoolHash({ ...TEMPLATE, readPathVolumes: [] }, DEFAULT_POD_SETTINGS)).not.toBe(hash);
    expect(computePoolHash({ ...TEMPLATE, command: ["node", "/opt/runtime.mjs"] }, DEFAULT_POD_SETTINGS)).not.toBe(hash);
    // A pod whose runtime starts held is no pod for a pool whose runtime starts at its binding, nor the other way.
    expect(computePoolHash({ ...TEMPLATE, runtimeStart: "at-binding" }, DEFAULT_POD_SETTINGS)).not.toBe(hash);
    expect(computePoolHash({ ...TEMPLATE, runtimeStart: "with-pod" }, DEFAULT_POD_SETTINGS)).toBe(hash);
    expect(computePoolHash(TEMPLATE, { ...DEFAULT_POD_SETTINGS, sidecarImage: "other:1" })).not.toBe(hash);
  });

  it("traces as a cold engine pod does: its sidecar and its runtime get the operator's endpoint, and the hash follows it", () => {
    const endpoint = "http://collector.observability:4318/v1/traces";
    const traced = { ...DEFAULT_POD_SETTINGS, tracing: { endpoint, content: "internal" as const } };
    const warm = buildPoolPod(TEMPLATE, "0a1b2c3d4e", traced);
    const snapshot = snapshotOf({ image: "registry.test/runtime:1" }, { ceilings: { runtimeImages: ["registry.test/runtime:1"] } });
    const cold = buildEnginePod(RUN, snapshot, buildWorkspaceMount(RUN, snapshot), traced);
    const tracingArgs = (args: readonly string[] = []) => args.flatMap((a, i) => (/^--(otlp-traces-endpoint|trace-content)$/.test(a) ? [a, args[i + 1]] : []));
    const otel = (env: readonly Record<string, unknown>[] = []) => env.filter((e) => String(e["name"]).startsWith("OTEL_"));
    expect(tracingArgs(warm.spec.initContainers![0]!.args)).toEqual(["--otlp-traces-endpoint", endpoint, "--trace-content", "internal"]);
    expect(tracingArgs(warm.spec.initContainers![0]!.args)).toEqual(tracingArgs(cold.spec.initContainers![0]!.args));
    expect(otel(warm.spec.containers[0]!.env)).toEqual([{ name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value: endpoint }]);
    expect(otel(warm.spec.containers[0]!.env)).toEqual(otel(cold.spec.containers[0]!.env));
    // Untraced, nothing of it; a pod made under another endpoint or content level is no pod for the pool today.
    expect(JSON.stringify(pod.spec)).not.toMatch(/otlp|trace-content|OTEL_/i);
    const hash = computePoolHash(TEMPLATE, traced);
    expect(warm.metadata.annotations?.[ANNOTATION.poolHash]).toBe(hash);
    expect(computePoolHash(TEMPLATE, DEFAULT_POD_SETTINGS)).not.toBe(hash);
    expect(computePoolHash(TEMPLATE, { ...traced, tracing: { endpoint: "http://other:4318/v1/traces", content: "internal" } })).not.toBe(hash);
    expect(computePoolHash(TEMPLATE, { ...traced, tracing: { endpoint, content: "public" } })).not.toBe(hash);
  });

  it("has an identity that may read its own pod and nothing else, and a claim of its own", () => {
    const [sa, role, binding, claim] = buildPoolPodPrerequisites(AGENT, "0a1b2c3d4e");
    expect(sa).toMatchObject({ kind: "ServiceAccount", metadata: { name: pod.spec.serviceAccountName }, automountServiceAccountToken: false });
    expect(role).toMatchObject({ kind: "Role", rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "watch"], resourceNames: ["notes-pool-0a1b2c3d4e"] }] });
    expect(binding).toMatchObject({ roleRef: { kind: "Role", name: "notes-pool-0a1b2c3d4e" }, subjects: [{ kind: "ServiceAccount", name: "notes-pool-0a1b2c3d4e", namespace: "team-a" }] });
    const volume = pod.spec.volumes.find((v) => v.name === "workspace") as unknown as { persistentVolumeClaim: { claimName: string } };
    expect(claim).toMatchObject({ kind: "PersistentVolumeClaim", metadata: { name: volume.persistentVolumeClaim.claimName } });
  });

  it("may exec into exactly its own sandbox pods, by name, which its sidecar is told to open its shell channels to", () => {
    const sbx = ["notes-pool-0a1b2c3d4e-sbx-b2", "notes-pool-0a1b2c3d4e-sbx-a1"];
    const [, role] = buildPoolPodPrerequisites(AGENT, "0a1b2c3d4e", sbx) as unknown as [unknown, { rules: unknown[] }];
    expect(role.rules).toEqual([
      { apiGroups: [""], resources: ["pods"], verbs: ["get", "watch"], resourceNames: ["notes-pool-0a1b2c3d4e"] },
      { apiGroups: [""], resources: ["pods"], verbs: ["get"], resourceNames: [sbx[1], sbx[0]] },
      { apiGroups: [""], resources: ["pods/exec"], verbs: ["create", "get"], resourceNames: [sbx[1], sbx[0]] },
    ]);
    const args = buildPoolPod(TEMPLATE, "0a1b2c3d4e", DEFAULT_POD_SETTINGS, sbx).spec.initContainers![0]!.args!;
    expect(args.flatMap((a, i) => (args[i - 1] === "--sandbox-pod" ? [a] : []))).toEqual([sbx[1], sbx[0]]);
    // No sandbox pod, no exec rule (an empty resourceNames would be every pod's) and no flag.
    expect((buildPoolPodPrerequisites(AGENT, "0a1b2c3d4e")[1] as unknown as { rules: unknown[] }).rules).toHaveLength(1);
    expect(sidecar.args).not.toContain("--sandbox-pod");
  });

  it("keeps the binding's volumes (runtime.json, files credentials) in memory, in the agent container alone, at a cold pod's paths", () => {
    const bound = pod.spec.volumes.filter((v) => v.name.startsWith("bound-"));
    expect(bound.map((v) => [v.name, (v as { emptyDir?: { medium?: string } }).emptyDir?.medium])).toEqual([["bound-runtime", "Memory"], ["bound-credentials", "Memory"]]);
    expect(sidecar.volumeMounts.some((m) => m.name.startsWith("bound-"))).toBe(false);
    const snapshot = snapshotOf({ image: "registry.test/runtime:1", credentials: [{ secretName: "model-key", as: "files" }] }, { ceilings: { runtimeImages: ["registry.test/runtime:1"] } });
    const cold = buildEnginePod(RUN, snapshot, buildWorkspaceMount(RUN, snapshot), DEFAULT_POD_SETTINGS).spec.containers[0]!;
    const coldPaths = cold.volumeMounts.map((m) => m.mountPath);
    expect(coldPaths).toEqual(expect.arrayContaining(["/etc/leviath/runtime", "/var/run/leviath/credentials/model-key"]));
    expect(agent.volumeMounts.filter((m) => m.name.startsWith("bound-")).map((m) => m.mountPath)).toEqual(["/etc/leviath/runtime", "/var/run/leviath/credentials"]);
  });
});

describe("a Run's identity in an adopted pool pod", () => {
  it("binds the Run's Role, plus get on its snapshot and exactly the credential Secrets it pins, to the pool pod's ServiceAccount", () => {
    const snapshot = snapshotOf({ image: "registry.test/runtime:1", credentials: [{ secretName: "model-key" }, { secretName: "tls", as: "files" }] }, { ceilings: { runtimeImages: ["registry.test/runtime:1"] } });
    const [role, binding] = buildPoolRunIdentity(RUN, snapshot, "notes-pool-0a1b2c3d4e", []) as unknown as [{ rules: unknown[] }, { subjects: unknown[] }];
    expect(role.rules).toContainEqual({ apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["model-key", "tls"] });
    expect(role.rules).toContainEqual({ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: [`${RUN.name}-policy`] });
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "notes-pool-0a1b2c3d4e", namespace: RUN.namespace }]);
    const none = buildPoolRunIdentity(RUN, snapshotOf({ image: "registry.test/runtime:1" }, { ceilings: { runtimeImages: ["registry.test/runtime:1"] } }), "p", [])[0] as unknown as { rules: { resources: string[] }[] };
    expect(none.rules.some((r) => r.resources.includes("secrets"))).toBe(false);
  });
});

describe("a pool pod adopted by a Run", () => {
  it("is labelled with the Run, bound, and owned by it alone, then annotated with it; its claim and identity too, without the annotations", () => {
    const adopted = buildAdoptedObject(pod, RUN);
    expect(adopted.metadata.labels).toMatchObject({ [LABEL.run]: RUN.name, [LABEL.poolState]: POOL_STATE.bound, [LABEL.pool]: "notes" });
    // The claim does not yet tell the pod's sidecar where to look: the annotations come once the Role and status are written.
    expect(adopted.metadata.annotations).toEqual(pod.metadata.annotations);
    expect(isAnnounced(adopted, RUN)).toBe(false);
    const announced = buildAnnouncedPod(adopted, RUN);
    expect(announced.metadata.annotations).toMatchObject({ [ANNOTATION.boundRun]: RUN.name, [ANNOTATION.boundRunUid]: RUN.uid, [ANNOTATION.poolHash]: pod.metadata.annotations![ANNOTATION.poolHash] });
    expect(isAnnounced(announced, RUN)).toBe(true);
    expect(isAnnounced(announced, { ...RUN, uid: "another-uid" })).toBe(false);
    expect({ ...announced, metadata: { ...announced.metadata, annotations: undefined } }).toEqual({ ...adopted, metadata: { ...adopted.metadata, annotations: undefined } });
    expect(adopted.metadata.ownerReferences).toEqual([{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: RUN.name, uid: RUN.uid, controller: true, blockOwnerDeletion: true }]);
    expect(adopted.spec).toEqual(pod.spec);
    const claim = buildAdoptedObject(buildPoolPodPrerequisites(AGENT, "0a1b2c3d4e")[3]!, RUN);
    expect(claim.metadata.labels?.[LABEL.poolState]).toBeUndefined();
    expect(claim.metadata.annotations).toBeUndefined();
    expect(listAdoptedObjects(pod.metadata.name)).toEqual({
      pod: `Pod/${pod.metadata.name}`, claim: `PersistentVolumeClaim/${pod.metadata.name}-workspace`,
      identity: ["ServiceAccount", "Role", "RoleBinding"].map((k) => `${k}/${pod.metadata.name}`),
    });
  });

  it("is the Run's engine pod: no engine pod, claim or account is built, sandboxes mount its claim, the Run's Role binds its account", () => {
    const snapshot = snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "debian:bookworm-slim", network: false } });
    const plan = computeSandboxPlan(RUN.name, snapshot.runPolicy);
    const objs = buildRunChildren({ run: RUN, snapshot, settings: DEFAULT_POD_SETTINGS, sandboxes: plan, hostExec: false, lifecycle: "active", pool: pod.metadata.name });
    expect(objs.map((o) => o.kind)).toEqual(["ConfigMap", "Role", "RoleBinding", "NetworkPolicy", "Pod"]);
    const [, role, binding, , sandbox] = objs as [unknown, { rules: { resources: string[]; resourceNames?: string[] }[] }, { subjects: { name: string }[] }, unknown, { metadata: { name: string }; spec: { volumes: { persistentVolumeClaim?: { claimName: string } }[] } }];
    expect(sandbox.metadata.name).toBe(plan[0]!.pod);
    expect(sandbox.spec.volumes.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName).toBe(`${pod.metadata.name}-workspace`);
    expect(binding.subjects.map((s) => s.name)).toEqual([pod.metadata.name]);
    expect(role.rules).toContainEqual(expect.objectContaining({ resources: ["configmaps"], resourceNames: [`${RUN.name}-policy`] }));
    const draining = buildRunChildren({ run: RUN, snapshot, settings: DEFAULT_POD_SETTINGS, sandboxes: [], hostExec: false, lifecycle: "finished", draining: true, pool: pod.metadata.name });
    expect(draining.map((o) => o.kind)).toEqual(["ConfigMap", "Role", "RoleBinding", "NetworkPolicy"]);
  });
});
