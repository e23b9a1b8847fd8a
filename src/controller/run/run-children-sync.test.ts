import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../kube/objects.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { createChildWriter } from "./run-children-sync.ts";

const REF = { namespace: "team", name: "r1", uid: "uid-r1" };
const OWNER = [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: "r1", uid: "uid-r1", controller: true }];

function child(kind: string, name: string, spec: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: "v1", kind, metadata: { name, namespace: "team", ownerReferences: OWNER }, ...spec } as KubeObject;
}

/** A cache holding `cached` and a writer that records each write, in order, as `verb Kind/name`. */
function harness(cached: KubeObject[], existing: KubeObject[] = []) {
  const writes: string[] = [];
  const cache: ClusterCache = {
    get: (_res, _ns, name) => cached.find((o) => o.metadata.name === name),
    list: () => cached,
    listOwnedBy: () => cached,
  };
  const record = (verb: string) => async (obj: KubeObject) => { writes.push(`${verb} ${obj.kind}/${obj.metadata.name}`); };
  const writer: ClusterWriter = {
    apply: record("apply"), create: record("create"), delete: record("delete"), deleteAtVersion: async () => true,
    applyStatus: async () => undefined, read: async () => undefined, readMetadata: async () => undefined,
    createOrGet: async (obj) => {
      const found = existing.find((o) => o.kind === obj.kind && o.metadata.name === obj.metadata.name);
      if (!found) writes.push(`create ${obj.kind}/${obj.metadata.name}`);
      return found ?? obj;
    },
    createOrFind: async (obj) => {
      const found = existing.find((o) => o.kind === obj.kind && o.metadata.name === obj.metadata.name);
      if (found) return { created: false, object: found };
      writes.push(`create ${obj.kind}/${obj.metadata.name}`);
      return { created: true, object: { ...obj, metadata: { ...obj.metadata, uid: `uid-${obj.metadata.name}` } } };
    },
    replace: async (obj, version) => { writes.push(version === undefined ? `create ${obj.kind}/${obj.metadata.name}` : `replace ${obj.kind}/${obj.metadata.name}@${version}`); },
  };
  return { writes, sync: createChildWriter(cache, writer).syncChildren };
}

const DESIRED = [
  child("ServiceAccount", "r1-sidecar"),
  child("NetworkPolicy", "r1-isolate", { spec: { podSelector: {}, policyTypes: ["Ingress", "Egress"] } }),
  child("Role", "r1-sidecar", { rules: [{ verbs: ["get"], resources: ["runs"] }] }),
  child("ConfigMap", "r1-policy", { data: { a: "b" } }),
  child("Pod", "r1-engine"),
];

describe("a Run's children", () => {
  it("are created when the cache holds none of them, the pod after its prerequisites, the ConfigMap never here", async () => {
    const { writes, sync } = harness([]);
    await sync(REF, DESIRED, { live: true });
    expect(writes.slice(0, 2).sort()).toEqual(["create NetworkPolicy/r1-isolate", "create ServiceAccount/r1-sidecar"]);
    expect(writes.slice(2).sort()).toEqual(["create Pod/r1-engine", "create Role/r1-sidecar"]);
    expect(writes.filter((w) => w.includes("ConfigMap"))).toEqual([]);
  });

  it("create the workspace claim before the pods that mount it, and never take over one someone else made", async () => {
    const claim = child("PersistentVolumeClaim", "r1-workspace", { spec: { accessModes: ["ReadWriteOnce"] } });
    const own = harness([]);
    await own.sync(REF, [...DESIRED, claim], { live: true });
    expect(own.writes.indexOf("create PersistentVolumeClaim/r1-workspace")).toBeLessThan(own.writes.indexOf("create Pod/r1-engine"));
    const planted = { ...claim, metadata: { name: "r1-workspace", namespace: "team" } };
    const taken = harness([], [planted]);
    await expect(taken.sync(REF, [...DESIRED, claim], { live: true })).rejects.toThrow("PersistentVolumeClaim 'r1-workspace' exists and was not made by the operator for this Run");
    expect(taken.writes.filter((w) => w.includes("Pod/") || w.includes("PersistentVolumeClaim"))).toEqual([]);
  });

  it("record the uid of the claim they create, and mount no claim under its name with another uid, whatever its owner says", async () => {
    const claim = child("PersistentVolumeClaim", "r1-workspace", { spec: { accessModes: ["ReadWriteOnce"] } });
    const made = harness([]);
    const record: { recorded?: string; accepted?: string } = {};
    await made.sync(REF, [...DESIRED, claim], { live: true, claim: record });
    expect(record.accepted).toBe("uid-r1-workspace");
    // Not on record, naming the Run as its owner, no pod yet (planted, or the operator's own left by a pass that
    // stopped before its status write), found on create or in the cache: deleted at its uid, never mounted.
    const planted = { ...claim, metadata: { ...claim.metadata, uid: "uid-planted" } };
    for (const [what, h] of [["found on create", harness([], [planted])], ["in the cache", harness([planted])]] as const) {
      const seen: { recorded?: string; accepted?: string } = {};
      await expect(h.sync(REF, [...DESIRED, claim], { live: true, claim: seen }), what).rejects.toThrow("PersistentVolumeClaim 'r1-workspace' names this Run as its owner but its uid is not on record");
      expect(h.writes.filter((w) => w.includes("Pod/") || w.includes("PersistentVolumeClaim")), what).toEqual(["delete PersistentVolumeClaim/r1-workspace"]);
      expect(seen.accepted, what).toBeUndefined();
    }
    // Already going: not deleted again, the Run waits for it.
    const going = harness([{ ...planted, metadata: { ...planted.metadata, deletionTimestamp: "2026-12-06T00:00:00Z" } }]);
    await expect(going.sync(REF, [...DESIRED, claim], { live: true })).rejects.toThrow("makes the Run's own once it is gone");
    expect(going.writes.filter((w) => w.includes("PersistentVolumeClaim") || w.includes("Pod/"))).toEqual([]);
    // Recorded: the claim with that uid is the Run's; one with another uid (deleted and planted again) is not.
    const kept = harness([planted]);
    await kept.sync(REF, [...DESIRED, claim], { live: true, claim: { recorded: "uid-planted" } });
    expect(kept.writes).toContain("create Pod/r1-engine");
    const swapped = harness([planted]);
    await expect(swapped.sync(REF, [...DESIRED, claim], { live: true, claim: { recorded: "uid-ours" } })).rejects.toThrow("was not made by the operator for this Run");
    // A Run started before uids were recorded (it has pods, which mount the claim already) records the one it has.
    const upgraded = harness([planted, DESIRED[4]!]);
    const first: { recorded?: string; accepted?: string } = {};
    await upgraded.sync(REF, [...DESIRED, claim], { live: true, claim: first });
    expect(first.accepted).toBe("uid-planted");
  });

  it("never delete a warm pool's sandbox pod that is not the Run's yet: they wait for its claim to show, or for the pool to retire it", async () => {
    const AGENT_OWNER = [{ apiVersion: "leviath.dev/v1alpha1", kind: "Agent", name: "notes", uid: "uid-agent", controller: true }];
    const sandbox = child("Pod", "p1-sbx-abc");
    const pooled = { ...sandbox, metadata: { ...sandbox.metadata, ownerReferences: AGENT_OWNER, labels: { "leviath.dev/pool": "notes" } } };
    const waiting = harness([pooled]);
    const waited = await waiting.sync(REF, [sandbox], { live: true });
    expect(waited.refused ? undefined : waited.requeueAfterMs).toBeGreaterThan(0);
    expect(waiting.writes).toEqual([]);
    // Anyone else's pod under that name is deleted and made again, as before.
    const planted = harness([{ ...sandbox, metadata: { ...sandbox.metadata, ownerReferences: AGENT_OWNER } }]);
    await planted.sync(REF, [sandbox], { live: true });
    expect(planted.writes).toEqual(["delete Pod/p1-sbx-abc"]);
  });

  it("are applied when one in the cache drifted, and not written when it matches", async () => {
    const widened = child("Role", "r1-sidecar", { rules: [{ verbs: ["get"], resources: ["runs"] }, { verbs: ["get"], resources: ["secrets"] }] });
    const { writes, sync } = harness([child("ServiceAccount", "r1-sidecar"), DESIRED[1]!, widened, DESIRED[4]!]);
    // The pod in the cache has no spec-hash annotation, as the desired one has none: it is kept, not replaced.
    await sync(REF, DESIRED, { live: true });
    expect(writes).toEqual(["apply Role/r1-sidecar"]);
  });

  it("replace the NetworkPolicy whole, at the cached version, when any field of its spec is not ours", async () => {
    const np = (spec: Record<string, unknown>) => {
      const obj = child("NetworkPolicy", "r1-isolate", { spec });
      obj.metadata.resourceVersion = "41";
      return obj;
    };
    const others = [child("ServiceAccount", "r1-sidecar"), DESIRED[2]!, DESIRED[4]!];
    const drifts = {
      "a policy type dropped": { podSelector: {}, policyTypes: ["Ingress"] },
      // Fields we never set: an apply would keep them, and the first two let traffic through.
      "an egress rule added": { podSelector: {}, policyTypes: ["Ingress", "Egress"], egress: [{}] },
      "an ingress rule added": { podSelector: {}, policyTypes: ["Ingress", "Egress"], ingress: [{ from: [{ podSelector: {} }] }] },
      "a selector key added": { podSelector: { matchLabels: { team: "x" } }, policyTypes: ["Ingress", "Egress"] },
      "a selector expression added": { podSelector: { matchExpressions: [{ key: "a", operator: "Exists" }] }, policyTypes: ["Ingress", "Egress"] },
    };
    for (const [what, spec] of Object.entries(drifts)) {
      const { writes, sync } = harness([...others, np(spec)]);
      await sync(REF, DESIRED, { live: true });
      expect(writes, what).toEqual(["replace NetworkPolicy/r1-isolate@41"]);
    }
    const { writes, sync } = harness([...others, np({ podSelector: {}, policyTypes: ["Ingress", "Egress"] })]);
    await sync(REF, DESIRED, { live: true });
    expect(writes, "a NetworkPolicy exactly as desired").toEqual([]);
  });

  it("write no pod before the start snapshot is accepted, and none when it is refused", async () => {
    const { writes, sync } = harness([]);
    const refused = sync(REF, DESIRED, { live: true, pinned: Promise.reject(new Error("the snapshot was refused")) });
    await expect(refused).rejects.toThrow("the snapshot was refused");
    expect(writes.some((w) => w.startsWith("create Pod/"))).toBe(false);
    expect(writes.some((w) => w.startsWith("create Role/"))).toBe(false);
  });

  it("says a refused start snapshot as a value: only a pod's prerequisites were written, nothing was pruned", async () => {
    const { writes, sync } = harness([child("ConfigMap", "r1-stray")]);
    expect(await sync(REF, DESIRED, { live: true, pinned: Promise.resolve(false) })).toEqual({ refused: true });
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((w) => /(ServiceAccount|NetworkPolicy)\//.test(w))).toBe(true);
  });
});
