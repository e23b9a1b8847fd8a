import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../kube/objects.ts";
import { RUN, snapshotOf } from "../../sandbox/test-fixtures.ts";
import { findBinding, listSparedChildren } from "./run-adoption.ts";

const POOL = { pod: "notes-pool-0a1b2c3d4e", from: "pool" as const, workspace: "notes-pool-0a1b2c3d4e-workspace" };
const IDENTITY = ["ServiceAccount", "Role", "RoleBinding"].map((k) => `${k}/${POOL.pod}`);

describe("listSparedChildren", () => {
  it("spares an adopted pod while its Run may keep it, its claim always, its identity while its sidecar may run", () => {
    const claim = `PersistentVolumeClaim/${POOL.pod}-workspace`;
    expect([...listSparedChildren(POOL, "active", false)].sort()).toEqual([`Pod/${POOL.pod}`, claim, ...IDENTITY].sort());
    expect([...listSparedChildren(POOL, "finished", true)].sort()).toEqual([`Pod/${POOL.pod}`, claim, ...IDENTITY].sort());
    expect([...listSparedChildren(POOL, "finished", false)].sort()).toEqual([`Pod/${POOL.pod}`, claim].sort());
    expect([...listSparedChildren(POOL, "stopped", false)]).toEqual([claim]);
  });

  it("spares nothing of a cold Run (or with warm pools off): its children are all built", () => {
    expect(listSparedChildren({ pod: "r1-engine", from: "cold", workspace: "r1-workspace" }, "active", false).size).toBe(0);
    expect(listSparedChildren(undefined, "active", false).size).toBe(0);
  });
});

describe("findBinding, for a Run adopted earlier", () => {
  const snapshot = snapshotOf({ image: "r:1" }, { ceilings: { runtimeImages: ["r:1"] } });
  const pod = (labels: Record<string, string>): KubeObject => ({ apiVersion: "v1", kind: "Pod", metadata: { name: POOL.pod, namespace: RUN.namespace, labels } });
  const bind = async (owned: KubeObject[]) => findBinding({ ref: RUN, previous: { startedFrom: "pool", enginePod: POOL.pod }, isOver: false, snapshot, owned });

  it("names the Run's sandbox pods after its pool pod when the pod carries the pool-pair label, or when its claim is not seen yet", async () => {
    expect(await bind([pod({ "leviath.dev/pool": "notes", "leviath.dev/pool-pair": POOL.pod })])).toEqual({ ...POOL, paired: true });
    expect(await bind([])).toEqual({ ...POOL, paired: true });
  });

  it("keeps the Run's own names for a pod adopted before pool pods carried the label (its sandbox pods could not be scheduled beside it)", async () => {
    expect(await bind([pod({ "leviath.dev/pool": "notes" })])).toEqual({ ...POOL, paired: false });
  });
});
