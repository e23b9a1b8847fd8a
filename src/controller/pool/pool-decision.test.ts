import { describe, expect, it } from "vitest";
import { observePoolPodState, type ObservedPoolPod } from "../warm/pool-pod-lookup.ts";
import { decideAdoption, decidePoolPods, MAX_POOL_CREATES_PER_PASS, type AdoptionInput } from "./pool-decision.ts";

const H = "hash-now";
const pod = (name: string, state: ObservedPoolPod["state"], over: Partial<ObservedPoolPod> = {}): ObservedPoolPod => ({ name, state, hash: H, createdMs: Number(name.replace(/\D/g, "")), deleting: false, ...over });

describe("observePoolPodState", () => {
  it("reads bound from the claim, failed from an ended phase, ready from the kubelet's Ready", () => {
    expect(observePoolPodState({ bound: true, phase: "Running", ready: true })).toBe("bound");
    expect(observePoolPodState({ bound: false, phase: "Failed", ready: false })).toBe("failed");
    expect(observePoolPodState({ bound: false, phase: "Succeeded", ready: false })).toBe("failed");
    expect(observePoolPodState({ bound: false, phase: "Running", ready: true })).toBe("ready");
    expect(observePoolPodState({ bound: false, phase: "Running", ready: false })).toBe("starting");
    expect(observePoolPodState({ bound: false, ready: false })).toBe("starting");
  });
});

describe("decidePoolPods", () => {
  it("fills an empty pool a few pods a pass", () => {
    expect(decidePoolPods(3, H, [])).toEqual({ create: 3, delete: [], ready: 0, starting: 0 });
    expect(decidePoolPods(10, H, []).create).toBe(MAX_POOL_CREATES_PER_PASS);
  });

  it("counts bound pods for nothing: the pool refills behind an adoption", () => {
    expect(decidePoolPods(2, H, [pod("p1", "bound"), pod("p2", "ready")])).toEqual({ create: 1, delete: [], ready: 1, starting: 0 });
  });

  it("retires stale and failed unbound pods and replaces them, never a bound one", () => {
    const plan = decidePoolPods(2, H, [pod("p1", "ready", { hash: "old" }), pod("p2", "failed"), pod("p3", "starting"), pod("p4", "bound", { hash: "old" })]);
    expect(plan).toEqual({ create: 1, delete: ["p1", "p2"], ready: 0, starting: 1 });
  });

  it("deletes the youngest past the size, and every unbound pod of a pool gone", () => {
    expect(decidePoolPods(1, H, [pod("p3", "ready"), pod("p1", "ready"), pod("p2", "starting")])).toEqual({ create: 0, delete: ["p2", "p3"], ready: 1, starting: 0 });
    expect(decidePoolPods(0, H, [pod("p1", "ready"), pod("p2", "bound")]).delete).toEqual(["p1"]);
  });

  it("ignores pods already being deleted", () => {
    expect(decidePoolPods(1, H, [pod("p1", "ready", { deleting: true })])).toEqual({ create: 1, delete: [], ready: 0, starting: 0 });
  });
});

describe("decideAdoption", () => {
  const base: AdoptionInput = {
    pool: { agent: "team-a/notes", size: 2 }, runHash: H, hostExec: false, mcpSecrets: false,
    workspace: { mountPath: "/workspace", size: "1Gi", accessMode: "ReadWriteOnce" },
    pods: [pod("p2", "ready"), pod("p1", "ready"), pod("p0", "starting"), pod("p9", "bound")],
  };

  it("adopts the oldest ready pod made from what the Run pins", () => {
    expect(decideAdoption(base)).toEqual({ kind: "adopt", pod: "p1" });
    expect(decideAdoption({ ...base, pods: [pod("p1", "ready", { hash: "old" }), pod("p2", "ready")] })).toEqual({ kind: "adopt", pod: "p2" });
  });

  it("takes the next ready pod after losing a race, and misses when all are lost", () => {
    expect(decideAdoption({ ...base, lost: new Set(["p1"]) })).toEqual({ kind: "adopt", pod: "p2" });
    expect(decideAdoption({ ...base, lost: new Set(["p1", "p2"]) })).toMatchObject({ kind: "miss", reason: "claim-conflict" });
  });

  it("misses with no ready pod of the Run's hash", () => {
    expect(decideAdoption({ ...base, pods: [pod("p0", "starting"), pod("p1", "ready", { hash: "old" }), pod("p2", "ready", { deleting: true })] }))
      .toEqual({ kind: "miss", reason: "no-ready-pod", message: "the pool of 'team-a/notes' has no ready pod made from what this Run pins" });
  });

  it("starts cold, not eligible, a Run with its own claim, another workspace or commands in the engine pod", () => {
    expect(decideAdoption({ ...base, workspace: { ...base.workspace, claimName: "mine" } })).toMatchObject({ kind: "miss", reason: "not-eligible", message: expect.stringContaining("'mine'") });
    expect(decideAdoption({ ...base, workspace: { ...base.workspace, size: "5Gi" } })).toMatchObject({ kind: "miss", reason: "not-eligible" });
    expect(decideAdoption({ ...base, workspace: { ...base.workspace, storageClassName: "fast" } })).toMatchObject({ kind: "miss", reason: "not-eligible" });
    expect(decideAdoption({ ...base, hostExec: true })).toMatchObject({ kind: "miss", reason: "not-eligible", message: expect.stringContaining("engine pod") });
    expect(decideAdoption({ ...base, mcpSecrets: true })).toMatchObject({ kind: "miss", reason: "not-eligible", message: expect.stringContaining("MCP server's Secret") });
  });

  it("is no miss at all without a pool", () => {
    expect(decideAdoption({ ...base, pool: undefined })).toEqual({ kind: "no-pool" });
    expect(decideAdoption({ ...base, pool: { agent: "team-a/notes", size: 0 } })).toEqual({ kind: "no-pool" });
  });
});
