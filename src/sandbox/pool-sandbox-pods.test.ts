import { describe, expect, it } from "vitest";
import { LABEL } from "../api/constants.ts";
import type { KubeObject, Pod } from "./kube-types.ts";
import { ANNOTATION, NETWORK_NONE } from "./names.ts";
import { DEFAULT_POD_SETTINGS } from "./pod-settings.ts";
import { buildAdoptedObject, buildPoolPod, buildPoolTemplate, POOL_STATE } from "./pool-pods.ts";
import { buildPoolNetworkPolicy, buildPoolSandboxPod, listPoolSandboxPlans } from "./pool-sandbox-pods.ts";
import { buildRunChildren } from "./run-children.ts";
import { buildNetworkPolicy } from "./run-objects.ts";
import { computeSandboxPlan } from "./sandbox-plan.ts";
import { RUN, snapshotOf } from "./test-fixtures.ts";

const AGENT = { namespace: RUN.namespace, name: "notes", uid: "agent-uid-1" };
const CACHE = { path: "/cache", volume: { persistentVolumeClaim: { claimName: "cache" } } };
// Two signatures: the Agent's default (no network) and a stage with the network and the admin's cache volume.
const snapshot = snapshotOf(
  {
    image: "r:1",
    sandbox: { kind: "container", image: "debian:bookworm-slim", network: false },
    stages: [{ name: "main" }, { name: "fetch", sandbox: { kind: "container", image: "debian:bookworm-slim", network: true, mounts: ["/cache"] } }],
  },
  { ceilings: { runtimeImages: ["r:1"] }, sandbox: { kind: "container", image: "debian:bookworm-slim", network: true, mounts: [CACHE] } },
);
const template = buildPoolTemplate(AGENT, snapshot, {});
const ENGINE = "notes-pool-0a1b2c3d4e";
const plans = listPoolSandboxPlans(template, ENGINE, () => true);
const pods = plans.map((p) => buildPoolSandboxPod(template, ENGINE, p, DEFAULT_POD_SETTINGS));

describe("a pool's sandbox pods, before any Run", () => {
  it("are one per signature a Run of the Agent plans, named after their engine pod", () => {
    expect(plans.map((p) => p.signature)).toEqual(computeSandboxPlan(RUN.name, snapshot.runPolicy).map((p) => p.signature));
    expect(pods.map((p) => p.metadata.name)).toEqual(plans.map((p) => `${ENGINE}-sbx-${p.signature}`));
    // A runtime class the cluster lacks: the pool makes no pod of it (a Run finds that sandbox unavailable).
    const classed = buildPoolTemplate(AGENT, snapshotOf({ image: "r:1", sandbox: { kind: "gvisor", image: "debian:bookworm-slim" } }, { ceilings: { runtimeImages: ["r:1"] }, sandbox: { runtimeClasses: { gvisor: "gvisor" } } }), {});
    expect(listPoolSandboxPlans(classed, ENGINE, () => false)).toEqual([]);
    expect(listPoolSandboxPlans(classed, ENGINE, (rc) => rc === "gvisor")).toHaveLength(1);
    expect(listPoolSandboxPlans({ ...template, sandboxes: undefined }, ENGINE, () => true)).toEqual([]);
  });

  it("hold no credential, no token, no task: the image sleeping, the engine pod's claim, the admin's volume only where a stage asks", () => {
    for (const pod of pods) {
      expect(JSON.stringify(pod)).not.toMatch(/secret|configMap|projected|envFrom|LEVIATH_/i);
      expect(pod.spec.automountServiceAccountToken).toBe(false);
      expect(pod.spec.serviceAccountName).toBeUndefined();
      expect(pod.spec.containers.map((c) => c.env)).toEqual([[{ name: "HOME", value: "/tmp" }]]);
      expect(pod.spec.volumes.find((v) => v.name === "workspace")).toEqual({ name: "workspace", persistentVolumeClaim: { claimName: `${ENGINE}-workspace` } });
    }
    const claims = (p: Pod) => p.spec.volumes.flatMap((v) => ((v as { persistentVolumeClaim?: { claimName: string } }).persistentVolumeClaim?.claimName ?? []));
    expect(pods.map(claims)).toEqual([[`${ENGINE}-workspace`], [`${ENGINE}-workspace`, "cache"]]);
  });

  it("are scheduled beside their engine pod, which carries the pair label from its creation", () => {
    const engine = buildPoolPod(template, "0a1b2c3d4e", DEFAULT_POD_SETTINGS);
    expect(engine.metadata.name).toBe(ENGINE);
    const selector = (pods[0]!.spec as { affinity?: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { labelSelector: { matchLabels: Record<string, string> } }[] } } }).affinity!.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]!.labelSelector.matchLabels;
    expect(selector).toEqual({ [LABEL.poolPair]: ENGINE, [LABEL.component]: "engine" });
    expect(engine.metadata.labels).toMatchObject(selector);
  });

  it("are the pool's: owned by the Agent, unbound, paired, and a network = false one selected by the pool's NetworkPolicy from the start", () => {
    const [isolated, open] = pods as [Pod, Pod];
    for (const pod of pods) {
      expect(pod.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: "Agent", uid: AGENT.uid, controller: true })]);
      expect(pod.metadata.labels).toMatchObject({ [LABEL.pool]: "notes", [LABEL.poolState]: POOL_STATE.ready, [LABEL.poolPair]: ENGINE, [LABEL.component]: "sandbox" });
      expect(pod.metadata.labels?.[LABEL.run]).toBeUndefined();
      expect(pod.metadata.annotations?.[ANNOTATION.poolPair]).toBe(ENGINE);
    }
    expect(isolated.metadata.labels?.[LABEL.network]).toBe(NETWORK_NONE);
    expect(open.metadata.labels?.[LABEL.network]).toBeUndefined();
    const selector = (buildPoolNetworkPolicy(AGENT) as KubeObject & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[] } }).spec;
    expect(selector).toEqual({ podSelector: { matchLabels: { [LABEL.pool]: "notes", [LABEL.network]: NETWORK_NONE } }, policyTypes: ["Ingress", "Egress"] });
    expect(isolated.metadata.labels).toMatchObject(selector.podSelector.matchLabels);
  });
});

describe("a pool's sandbox pod adopted by a Run", () => {
  const children = buildRunChildren({ run: RUN, snapshot, settings: DEFAULT_POD_SETTINGS, sandboxes: computeSandboxPlan(ENGINE, snapshot.runPolicy), hostExec: false, lifecycle: "active", pool: ENGINE, pairedSandboxes: true });
  const wanted = children.filter((o): o is Pod => o.kind === "Pod");

  it("is exactly the pod the Run would build for its pool pod: same name, same spec hash (kept, never replaced)", () => {
    expect(wanted.map((p) => p.metadata.name)).toEqual(pods.map((p) => p.metadata.name));
    expect(wanted.map((p) => p.spec)).toEqual(pods.map((p) => p.spec));
    expect(wanted.map((p) => p.metadata.annotations?.[ANNOTATION.specHash])).toEqual(pods.map((p) => p.metadata.annotations?.[ANNOTATION.specHash]));
    // A cold Run's sandbox pod is scheduled beside its own engine pod: another spec.
    const cold = buildRunChildren({ run: RUN, snapshot, settings: DEFAULT_POD_SETTINGS, sandboxes: computeSandboxPlan(RUN.name, snapshot.runPolicy), hostExec: false, lifecycle: "active" });
    expect(cold.find((o) => o.kind === "Pod")?.metadata.annotations?.[ANNOTATION.specHash]).not.toBe(pods[0]!.metadata.annotations?.[ANNOTATION.specHash]);
  });

  it("keeps network = false under a NetworkPolicy throughout: the pool's still selects it, the Run's selects it by the Run label it gets", () => {
    const adopted = buildAdoptedObject(pods[0]!, RUN);
    expect(adopted.metadata.labels).toMatchObject({ [LABEL.run]: RUN.name, [LABEL.poolState]: POOL_STATE.bound, [LABEL.pool]: "notes", [LABEL.network]: NETWORK_NONE });
    expect(adopted.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: "Run", uid: RUN.uid, controller: true })]);
    expect(adopted.spec).toEqual(pods[0]!.spec);
    const runPolicy = (buildNetworkPolicy(RUN, "notes") as KubeObject & { spec: { podSelector: { matchLabels: Record<string, string> } } }).spec.podSelector.matchLabels;
    const poolPolicy = (buildPoolNetworkPolicy(AGENT) as KubeObject & { spec: { podSelector: { matchLabels: Record<string, string> } } }).spec.podSelector.matchLabels;
    expect(adopted.metadata.labels).toMatchObject(runPolicy);
    expect(adopted.metadata.labels).toMatchObject(poolPolicy);
    expect(children.some((o) => o.kind === "NetworkPolicy")).toBe(true);
    // The Run's Role lets its sidecar exec into exactly these pods.
    const role = children.find((o) => o.kind === "Role") as KubeObject & { rules: { resources: string[]; resourceNames?: string[] }[] };
    expect(role.rules.find((r) => r.resources.includes("pods/exec"))?.resourceNames).toEqual(pods.map((p) => p.metadata.name).sort());
  });
});
