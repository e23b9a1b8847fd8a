import { describe, expect, it } from "vitest";
import { listSparedChildren } from "./run-adoption.ts";

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
