import { describe, expect, it } from "vitest";
import { decidePoolSandboxPods, type ObservedPoolSandbox, type PairState } from "./pool-sandbox-decision.ts";

const sbx = (name: string, pair: string | undefined, specHash = "h", deleting = false): ObservedPoolSandbox => ({ name, pair, specHash, deleting });
const decide = (desired: Record<string, { name: string; specHash: string }[]>, pairs: Record<string, PairState>, sandboxes: ObservedPoolSandbox[]) =>
  decidePoolSandboxPods({ desired: new Map(Object.entries(desired)), pairs: new Map(Object.entries(pairs)), sandboxes });

describe("a pool's sandbox pods", () => {
  it("are created for each engine pod the pool keeps, one per planned signature, and only those missing", () => {
    const plan = decide({ p1: [{ name: "p1-sbx-a", specHash: "h" }, { name: "p1-sbx-b", specHash: "h" }], p2: [{ name: "p2-sbx-a", specHash: "h" }] }, {}, [sbx("p1-sbx-a", "p1")]);
    expect(plan).toEqual({ create: ["p1-sbx-b", "p2-sbx-a"], delete: [] });
  });

  it("are replaced when their spec changed or their signature is no longer planned; a name still held waits for a later pass", () => {
    const plan = decide({ p1: [{ name: "p1-sbx-a", specHash: "new" }] }, {}, [sbx("p1-sbx-a", "p1", "old"), sbx("p1-sbx-z", "p1")]);
    expect(plan).toEqual({ create: [], delete: ["p1-sbx-a", "p1-sbx-z"] });
    expect(decide({ p1: [{ name: "p1-sbx-a", specHash: "new" }] }, {}, [sbx("p1-sbx-a", "p1", "old", true)])).toEqual({ create: [], delete: [] });
  });

  it("are left to the Run that adopted their engine pod, and deleted once nobody will take them", () => {
    const sandboxes = [sbx("b-sbx", "bound"), sbx("g-sbx", "gone"), sbx("u-sbx", "unknown"), sbx("x-sbx", undefined)];
    expect(decide({}, { bound: "bound", gone: "gone" }, sandboxes)).toEqual({ create: [], delete: ["g-sbx", "u-sbx", "x-sbx"] });
  });

  it("are all deleted when the pool keeps no engine pod (a pool removed, an Agent that cannot run)", () => {
    expect(decide({}, { p1: "gone" }, [sbx("p1-sbx-a", "p1"), sbx("p1-sbx-b", "p1", "h", true)])).toEqual({ create: [], delete: ["p1-sbx-a"] });
  });
});
