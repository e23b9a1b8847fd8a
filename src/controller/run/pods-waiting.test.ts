import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../kube/objects.ts";
import { decideRunReadiness } from "../readiness.ts";
import { decidePodsWaiting, observePod } from "./pods-waiting.ts";

const unscheduled = { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}." };
const pod = (conditions: object[], phase = "Pending") => observePod({ apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, status: { phase, conditions } } as never);
const claim = (name: string, phase: string, storageClassName?: string): KubeObject =>
  ({ apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name }, spec: { ...(storageClassName ? { storageClassName } : {}) }, status: { phase } }) as KubeObject;

describe("decidePodsWaiting", () => {
  it("quotes the scheduler when it could not place a pod; nothing while pods wait untried or are placed", () => {
    const c = decidePodsWaiting(new Map([["r-engine", pod([unscheduled])]]), []);
    expect(c).toEqual({ type: "PodsWaiting", status: "True", reason: "Unschedulable", message: `pod 'r-engine' cannot be scheduled (Unschedulable: ${unscheduled.message})` });
    expect(decidePodsWaiting(new Map([["r-engine", pod([])]]), [claim("r-workspace", "Pending")])).toBeUndefined();
    expect(decidePodsWaiting(new Map([["r-engine", pod([{ type: "PodScheduled", status: "True" }])]]), [])).toBeUndefined();
    expect(decidePodsWaiting(new Map([["r-engine", pod([unscheduled], "Failed")]]), [])).toBeUndefined();
  });

  it("names the Run's unbound claim as the cause when the scheduler could not place a pod, and a Lost claim always", () => {
    const c = decidePodsWaiting(new Map([["r-engine", pod([{ ...unscheduled, message: "0/1 nodes are available: 1 pod has unbound immediate PersistentVolumeClaims." }])]]), [claim("r-workspace", "Pending", "fast")]);
    expect(c?.reason).toBe("ClaimNotBound");
    expect(c?.message).toMatch(/^claim 'r-workspace' is Pending, bound to no volume \(storage class 'fast'\); pod 'r-engine' cannot be scheduled \(Unschedulable: .*unbound immediate PersistentVolumeClaims/);
    expect(decidePodsWaiting(new Map(), [claim("r-workspace", "Lost")])).toMatchObject({ reason: "ClaimNotBound", message: "claim 'r-workspace' is Lost, bound to no volume (storage class (the cluster's default))" });
  });

  it("is the reason a Pending Run gives in Ready, ahead of the sandboxes it waits for", () => {
    const waiting = decidePodsWaiting(new Map([["r-engine", pod([unscheduled])]]), [])!;
    const sandbox = { type: "SandboxReady", status: "False" as const, reason: "WaitingForPods", message: "waiting for sandbox pods" };
    expect(decideRunReadiness("Pending", [sandbox, waiting])[0]).toMatchObject({ type: "Ready", status: "False", reason: "Unschedulable", message: waiting.message });
    expect(decideRunReadiness("Pending", [sandbox])[0]).toMatchObject({ reason: "WaitingForPods" });
  });
});
