// decidePoolLeftovers as a table: which identities and claims of a pool, left by a pass that stopped before their
// pod, are collected, which wait for their grace, and which are a live pod's (under any owner) and stay.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../kube/objects.ts";
import { buildPoolNames, buildPoolPodPrerequisites } from "../../sandbox/pool-pods.ts";
import { decidePoolLeftovers, poolPodOf } from "./pool-leftovers.ts";

const AGENT = { namespace: "team", name: "notes", uid: "agent-uid" };
const GRACE = 60_000;
const NOW = 100_000;
const pod = (id: string) => buildPoolNames("notes", id).pod;

/** The pool pod `id`'s identity and claim as cached, created at `createdMs`. */
const objectsOf = (id: string, createdMs: number, extra: Partial<KubeObject["metadata"]> = {}): KubeObject[] =>
  buildPoolPodPrerequisites(AGENT, id).map((o) => ({ ...o, metadata: { ...o.metadata, creationTimestamp: new Date(createdMs).toISOString(), ...extra } }) as KubeObject);

describe("poolPodOf", () => {
  it("names the pod of a pool identity or claim, and nothing for other objects", () => {
    expect(objectsOf("a1", 0).map(poolPodOf)).toEqual([pod("a1"), pod("a1"), pod("a1"), pod("a1")]);
    const [sa] = objectsOf("a1", 0);
    const unlabelled = { ...sa!, metadata: { ...sa!.metadata, labels: {} } };
    expect(poolPodOf(unlabelled)).toBeUndefined();
    expect(poolPodOf({ ...sa!, kind: "Pod" })).toBeUndefined();
    expect(poolPodOf({ ...sa!, kind: "NetworkPolicy", metadata: { ...sa!.metadata, labels: { ...sa!.metadata.labels, "leviath.dev/component": "network-policy" } } })).toBeUndefined();
  });
});

describe("decidePoolLeftovers", () => {
  const rows: { name: string; owned: KubeObject[]; live: string[]; collect: string[]; recheckMs?: number }[] = [
    { name: "a pod's identity and claim with the pod in the cache stay", owned: objectsOf("a1", 0), live: [pod("a1")], collect: [] },
    { name: "with the pod under a Run's ownership (adopted) they stay", owned: objectsOf("a1", 0), live: [pod("a1")], collect: [] },
    { name: "without the pod and past the grace, all four go", owned: objectsOf("a1", NOW - GRACE), live: [], collect: ["ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim"] },
    { name: "without the pod and within the grace, they wait, looked at again when it ends", owned: objectsOf("a1", NOW - 1_000), live: [], collect: [], recheckMs: GRACE - 1_000 },
    { name: "already being deleted, nothing is asked again", owned: objectsOf("a1", 0, { deletionTimestamp: new Date(NOW).toISOString() }), live: [], collect: [] },
    {
      name: "each pod decides for its own objects", owned: [...objectsOf("a1", 0), ...objectsOf("b2", 0), ...objectsOf("c3", NOW - 10_000)], live: [pod("a1")],
      collect: ["ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim"], recheckMs: GRACE - 10_000,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const plan = decidePoolLeftovers({ owned: row.owned, livePods: new Set(row.live), nowMs: NOW, graceMs: GRACE });
      expect(plan.collect.map((o) => o.kind)).toEqual(row.collect);
      expect(plan.recheckMs).toBe(row.recheckMs);
    });
  }
});
