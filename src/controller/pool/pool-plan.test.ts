// planPool as a table of observation -> plan: what one pool pass retires, creates and keeps, from what it read.
import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema } from "../../api/leviath-policy.ts";
import type { KubeObject } from "../../kube/objects.ts";
import { DEFAULT_POD_SETTINGS } from "../../sandbox/pod-settings.ts";
import { buildPoolNames, buildPoolPod, buildPoolPodPrerequisites, buildPoolTemplate, computePoolHash } from "../../sandbox/pool-pods.ts";
import { buildRunSnapshot } from "../../sandbox/run-snapshot.ts";
import { AgentSpecSchema } from "../../api/agent.ts";
import { RunSpecSchema } from "../../api/run.ts";
import { planPool, PoolCreations, UNSEEN_CREATE_EXPIRY_MS, type PoolObservation } from "./pool-reconciler.ts";
import { MAX_STARTING, REFILL_AFTER_MS } from "./pool-refill.ts";

const AGENT = { namespace: "team", name: "notes", uid: "agent-uid" };
const SPEC = { image: "r:1" };
const policyOf = (size: number) => LeviathPolicySpecSchema.parse({ ceilings: { runtimeImages: ["r:1"] }, pools: [{ agent: "team/notes", size }] });

/** The pool's template as the controller builds it, for pods "made from what a Run pins today". */
function template(size: number) {
  const policy = policyOf(size);
  const snapshot = buildRunSnapshot({ agent: { ...AGENT, generation: 1, spec: AgentSpecSchema.parse(SPEC), written: SPEC }, policy: { name: "cluster", generation: 1, spec: policy }, run: RunSpecSchema.parse({ agentRef: { name: "notes" } }) });
  if (!snapshot.ok) throw new Error(snapshot.message);
  return buildPoolTemplate(AGENT, snapshot.value, policy.pools[0]!);
}

/** A pool pod as cached: its prerequisites too, ready or starting, of the current template or another. */
function poolPod(id: string, opts: { ready?: boolean; stale?: boolean; createdMs?: number } = {}): KubeObject[] {
  const pod = buildPoolPod(template(1), id, DEFAULT_POD_SETTINGS) as KubeObject;
  const hash = opts.stale ? "old" : computePoolHash(template(1), DEFAULT_POD_SETTINGS);
  const cached = {
    ...pod, metadata: { ...pod.metadata, creationTimestamp: new Date(opts.createdMs ?? 0).toISOString(), annotations: { ...pod.metadata.annotations, "leviath.dev/pool-hash": hash } },
    status: { phase: "Running", conditions: [{ type: "Ready", status: opts.ready === false ? "False" : "True" }] },
  } as KubeObject;
  return [cached, ...buildPoolPodPrerequisites(AGENT, id)];
}

/** `adopted`: pool pods a Run holds (in the cache, no longer the Agent's). */
function observe(size: number | undefined, owned: KubeObject[], lastAdoptionMs?: number, adopted: string[] = []): PoolObservation {
  const spec = size === undefined ? LeviathPolicySpecSchema.parse({ ceilings: { runtimeImages: ["r:1"] } }) : policyOf(size);
  return {
    agentObj: { apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: AGENT.name, namespace: AGENT.namespace, uid: AGENT.uid, generation: 1 }, spec: SPEC } as KubeObject,
    agent: AGENT, policy: { kind: "valid", spec, generation: 1 }, settings: DEFAULT_POD_SETTINGS, nowMs: 1_000, owned,
    sandboxes: { runtimeClasses: new Set(), pairs: new Map(), networkPolicy: undefined }, lastAdoptionMs,
    livePoolPods: new Set([...owned.filter((o) => o.kind === "Pod").map((o) => o.metadata.name), ...adopted]), leftoverGraceMs: 60_000,
  };
}

const podName = (id: string) => buildPoolNames("notes", id).pod;

/** A pool pod's identity and claim as a pass that stopped before the pod left them, created at `createdMs`. */
const leftover = (id: string, createdMs = 1_000 - 60_000): KubeObject[] =>
  buildPoolPodPrerequisites(AGENT, id).map((o) => ({ ...o, metadata: { ...o.metadata, creationTimestamp: new Date(createdMs).toISOString(), resourceVersion: "7" } }) as KubeObject);

describe("planPool", () => {
  const rows: { name: string; size: number | undefined; owned: KubeObject[]; create: number; retire: string[]; requeue: boolean }[] = [
    { name: "an empty pool of size 2 creates two pods, each with its prerequisites", size: 2, owned: [], create: 2, retire: [], requeue: true },
    { name: "a full pool of ready current pods writes nothing and looks again only on events", size: 1, owned: poolPod("a1"), create: 0, retire: [], requeue: false },
    { name: "a stale pod is retired with its identity and claim, and replaced", size: 1, owned: poolPod("a1", { stale: true }), create: 1, retire: ["notes-pool-a1"], requeue: true },
    { name: "past the size, the youngest goes", size: 1, owned: [...poolPod("a1", { createdMs: 1 }), ...poolPod("b2", { createdMs: 2 })], create: 0, retire: ["notes-pool-b2"], requeue: true },
    { name: "a pool no longer declared retires every unbound pod", size: undefined, owned: poolPod("a1"), create: 0, retire: ["notes-pool-a1"], requeue: true },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const plan = planPool(observe(row.size, row.owned));
      expect(plan.create.length).toBe(row.create);
      for (const c of plan.create) expect(c.prerequisites.map((o) => o.kind)).toEqual(["ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim"]);
      expect(plan.retire.map((r) => r.pod.metadata.name)).toEqual(row.retire);
      for (const r of plan.retire) expect(r.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(["PersistentVolumeClaim", "Role", "RoleBinding", "ServiceAccount"].map((k) => `${k}/${k === "PersistentVolumeClaim" ? `${r.pod.metadata.name}-workspace` : r.pod.metadata.name}`).sort());
      expect(plan.requeueAfterMs !== undefined).toBe(row.requeue);
    });
  }

  it("refills after the last adoption's hand-over, a few pods starting at a time, and says when it is full", () => {
    // Adopted 200 ms ago (the pass's clock is 1000): nothing yet, looked at again when the hand-over is past.
    const held = planPool(observe(3, [], 800));
    expect([held.create.length, held.requeueAfterMs, held.full]).toEqual([0, REFILL_AFTER_MS - 200, false]);
    // Then at most MAX_STARTING at once, counting those still starting.
    expect(planPool(observe(3, [], 0)).create.length).toBe(MAX_STARTING);
    expect(planPool(observe(3, [...poolPod("a1", { ready: false }), ...poolPod("b2", { ready: false })], 0)).create.length).toBe(0);
    expect(planPool(observe(3, [...poolPod("a1", { ready: false }), ...poolPod("b2")], 0)).create.length).toBe(1);
    expect(planPool(observe(1, poolPod("a1"), 0)).full).toBe(true);
    expect(planPool(observe(undefined, [], 0)).full).toBe(false);
  });

  it("collects the identity and claim a pass left without their pod, once past the grace, and keeps an adopted pod's", () => {
    const plan = planPool(observe(1, [...poolPod("a1"), ...leftover("c3")]));
    expect(plan.collect.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(["ServiceAccount", "Role", "RoleBinding"].map((k) => `${k}/${podName("c3")}`).concat(`PersistentVolumeClaim/${podName("c3")}-workspace`));
    expect(plan.retire).toEqual([]);
    // Made 400 ms ago (the pass's clock is 1000): its pass may still be on its way to the pod; looked at again after the grace.
    const young = planPool(observe(1, [...poolPod("a1"), ...leftover("c3", 600)]));
    expect([young.collect, young.requeueAfterMs]).toEqual([[], 60_000 - 400]);
    // A Run adopted the pod (owned by the Run now, still in the cache) while its claim is still the Agent's: kept.
    expect(planPool(observe(1, [...poolPod("a1"), ...leftover("c3")], undefined, [podName("c3")])).collect).toEqual([]);
    expect(planPool(observe(1, poolPod("a1"))).collect).toEqual([]);
  });

  it("names new pods apart from the ones the cache holds, the same for the same observation", () => {
    const obs = observe(2, poolPod("a1"));
    const plan = planPool(obs);
    expect(plan.create.map((c) => c.pod.metadata.name)).not.toContain(podName("a1"));
    expect(planPool(obs)).toEqual(plan);
  });
});

describe("planPool with pods created and not yet in the cache", () => {
  const hash = computePoolHash(template(1), DEFAULT_POD_SETTINGS);
  const unseen = (id: string) => ({ name: podName(id), state: "starting" as const, hash, createdMs: 900, deleting: false });

  it("counts them as starting: a pass before the cache catches up creates no second pod", () => {
    const plan = planPool({ ...observe(1, []), unseenCreates: [unseen("a1")] });
    expect(plan.create).toEqual([]);
    expect(plan.retire).toEqual([]);
  });

  it("never retires one (no version to delete it at), and picks new names apart from them", () => {
    expect(planPool({ ...observe(undefined, []), unseenCreates: [unseen("a1")] }).retire).toEqual([]);
    const plan = planPool({ ...observe(2, []), unseenCreates: [unseen("a1")] });
    expect(plan.create.map((c) => c.pod.metadata.name)).toHaveLength(1);
    expect(plan.create[0]!.pod.metadata.name).not.toBe(podName("a1"));
  });

  it("are forgotten once the cache shows them (under any owner) or past the expiry", () => {
    const creations = new PoolCreations();
    creations.created("team/notes", unseen("a1"));
    creations.created("team/notes", unseen("b2"));
    expect(creations.unseen("team/notes", () => false, 1_000).map((p) => p.name)).toEqual([podName("a1"), podName("b2")]);
    expect(creations.unseen("team/notes", (name) => name === podName("a1"), 1_000).map((p) => p.name)).toEqual([podName("b2")]);
    expect(creations.unseen("team/notes", () => false, 900 + UNSEEN_CREATE_EXPIRY_MS + 1)).toEqual([]);
    expect(creations.unseen("other/pool", () => false, 1_000)).toEqual([]);
  });
});
