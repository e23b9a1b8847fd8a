import { describe, expect, it } from "vitest";
import { RunSpecSchema } from "../../api/run.ts";
import type { RunStatus } from "../../api/status.ts";
import { computeSandboxPlan } from "../../sandbox/sandbox-plan.ts";
import { RUN, snapshotOf } from "../../sandbox/test-fixtures.ts";
import { decideRun, type ObservedPod, type RunObservation } from "./run-decision.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
const boxed = snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3", network: false } });
const plan = computeSandboxPlan(RUN.name, boxed.runPolicy);
const sandboxPod = plan[0]!.pod;
const engine = `${RUN.name}-engine`;
const READY: ObservedPod = { phase: "Running", ready: true };

type Over = Omit<Partial<RunObservation>, "pods" | "spec"> & { pods?: Record<string, ObservedPod>; at?: number; spec?: Record<string, unknown> };

function observe(over: Over = {}): RunObservation {
  const at = over.at ?? T0;
  return {
    name: RUN.name,
    previous: undefined,
    snapshot: boxed,
    plan,
    hasRuntimeClass: () => true,
    nowMs: at,
    nowIso: iso(at),
    ...over,
    spec: RunSpecSchema.parse({ agentRef: { name: "notes" }, ...(over.spec ?? {}) }),
    pods: new Map(Object.entries(over.pods ?? {})),
  };
}

const cond = (d: ReturnType<typeof decideRun>, type: string) => d.conditions.find((c) => c.type === type);
const started = (extra: Partial<RunStatus> = {}): RunStatus => ({ startedAt: iso(T0), ...extra });

describe("decideRun", () => {
  it("waits for its sandbox pods, asking to look again at the deadline", () => {
    const d = decideRun(observe());
    expect(d.phase).toBe("Pending");
    expect(d.lifecycle).toBe("active");
    expect(d.sandboxes.map((s) => s.pod)).toEqual([sandboxPod]);
    expect(cond(d, "SandboxReady")).toMatchObject({ status: "False", reason: "WaitingForPods" });
    expect(cond(d, "SandboxReady")!.message).toContain("deadline 2026-01-01T00:05:00Z");
    expect(cond(d, "NetworkIsolated")).toMatchObject({ status: "Unknown", reason: "NetworkPolicyApplied" });
    expect(d.requeueAfterMs).toBe(300_000);
  });

  it.each([
    ["Running when every sandbox and the engine run", {}, "Running"],
    ["WaitingInput while a prompt is pending", { pendingApprovals: [{ id: "a", kind: "taint_gate" as const, tool: "send_email" }] }, "WaitingInput"],
  ])("%s", (_n, extra, phase) => {
    const d = decideRun(observe({ previous: started(extra), pods: { [sandboxPod]: READY, [engine]: READY } }));
    expect(d.phase).toBe(phase);
    expect(cond(d, "SandboxReady")).toMatchObject({ status: "True", reason: "Ready" });
    expect(d.requeueAfterMs).toBeUndefined();
  });

  it("fails at the deadline under onUnavailable=error and stops every pod", () => {
    const d = decideRun(observe({ previous: started(), at: T0 + 300_000 }));
    expect(d.phase).toBe("Failed");
    expect(d.lifecycle).toBe("stopped");
    expect(d.sandboxes).toEqual([]);
    expect(cond(d, "SandboxReady")).toMatchObject({ reason: "SandboxUnavailable", message: `sandbox unavailable: sandbox pod '${sandboxPod}' not ready within 300s` });
    expect(d.message).toBe(cond(d, "SandboxReady")!.message);
    expect(d.completedAt).toBe(iso(T0 + 300_000));
  });

  it("falls back to the engine pod under warn, for good, and says the network is open", () => {
    const warn = snapshotOf({ image: "r:1", sandbox: { kind: "gvisor", image: "alpine:3", network: false, onUnavailable: "warn" } }, { sandbox: { runtimeClasses: { gvisor: "gvisor" } } });
    const warnPlan = computeSandboxPlan(RUN.name, warn.runPolicy);
    const d = decideRun(observe({ snapshot: warn, plan: warnPlan, hasRuntimeClass: () => false }));
    expect(d.sandboxes).toEqual([]);
    expect(d.hostExec).toBe(true);
    expect(d.sandboxStatus[0]).toMatchObject({ fellBackToHost: true, unavailableReason: "runtime class 'gvisor' does not exist" });
    expect(cond(d, "NetworkIsolated")).toMatchObject({ status: "False", reason: "FellBackToHost" });
    // The runtime class appearing later does not move the run back: the fallback is recorded on status.
    const later = decideRun(observe({ snapshot: warn, plan: warnPlan, previous: started({ sandboxes: d.sandboxStatus }) }));
    expect(later.sandboxes).toEqual([]);
    expect(cond(later, "SandboxReady")!.message).toContain("runtime class 'gvisor' does not exist");
  });

  it("fails at once when a sandbox can never start (no image)", () => {
    const noImage = snapshotOf({ image: "r:1", sandbox: { kind: "container" } });
    const d = decideRun(observe({ snapshot: noImage, plan: computeSandboxPlan(RUN.name, noImage.runPolicy) }));
    expect(d.phase).toBe("Failed");
    expect(cond(d, "SandboxReady")!.message).toBe("sandbox unavailable: container sandbox requires an `image`");
  });

  it.each([
    ["Succeeded", "Succeeded", "finished"],
    ["Failed", "Failed", "finished"],
  ])("follows the engine pod to %s, keeping the pod", (podPhase, phase, lifecycle) => {
    const d = decideRun(observe({ previous: started(), pods: { [sandboxPod]: READY, [engine]: { phase: podPhase, ready: false } } }));
    expect(d.phase).toBe(phase);
    expect(d.lifecycle).toBe(lifecycle);
    expect(cond(d, "SandboxReady")).toMatchObject({ reason: "RunFinished" });
  });

  it("never leaves a terminal phase, keeping its completion time and its reason", () => {
    const failed = decideRun(observe({ previous: started(), at: T0 + 300_000 }));
    const conditions = failed.conditions.map((c) => ({ ...c, lastTransitionTime: iso(T0 + 300_000) }));
    const again = decideRun(observe({
      previous: started({ phase: "Failed", completedAt: failed.completedAt!, message: failed.message!, conditions }),
      pods: { [sandboxPod]: READY, [engine]: READY }, at: T0 + 999_000,
    }));
    expect(again.phase).toBe("Failed");
    expect(again.completedAt).toBe(failed.completedAt);
    expect(cond(again, "SandboxReady")).toEqual(cond(failed, "SandboxReady"));
  });

  it("is Cancelled when asked, and stops its pods", () => {
    const d = decideRun(observe({ spec: { desiredState: "Cancelled" }, pods: { [engine]: READY } }));
    expect(d.phase).toBe("Cancelled");
    expect(d.lifecycle).toBe("stopped");
  });

  it("needs no sandbox when every stage runs in the engine pod", () => {
    const host = snapshotOf({ image: "r:1" });
    const d = decideRun(observe({ snapshot: host, plan: [] }));
    expect(cond(d, "SandboxReady")).toMatchObject({ status: "True", reason: "NoSandbox" });
    expect(d.hostExec).toBe(true);
    expect(cond(d, "NetworkIsolated")).toBeUndefined();
  });

  it("ends Succeeded when the agent container exits 0, saying so in Completed", () => {
    const done: ObservedPod = { phase: "Succeeded", ready: false, agent: { exitCode: 0, reason: "Completed" } };
    const d = decideRun(observe({ previous: started(), pods: { [engine]: done } }));
    expect(d.phase).toBe("Succeeded");
    expect(d.agentExit).toEqual({ exitCode: 0, reason: "Completed" });
    expect(cond(d, "Completed")).toMatchObject({ status: "True", reason: "AgentSucceeded", message: "the agent container exited with code 0 (Completed)" });
    expect(d.draining).toBeUndefined();
  });

  it("ends Failed with the agent's exit code, reason and message, and keeps them once the pod is gone", () => {
    const exit = { exitCode: 3, reason: "Error", message: "model quota exhausted" };
    const d = decideRun(observe({ previous: started(), pods: { [sandboxPod]: READY, [engine]: { phase: "Failed", ready: false, agent: exit } } }));
    expect(d.phase).toBe("Failed");
    expect(cond(d, "Completed")).toMatchObject({ status: "True", reason: "AgentFailed", message: "the agent container exited with code 3 (Error): model quota exhausted" });
    expect(d.message).toBe(cond(d, "Completed")!.message);
    // The sandbox pod still stops: the sidecar identity and the NetworkPolicy stay until it is gone.
    expect(d.draining).toBe(true);
    const conditions = d.conditions.map((c) => ({ ...c, lastTransitionTime: iso(T0) }));
    const later = decideRun(observe({ previous: started({ phase: "Failed", completedAt: d.completedAt!, message: d.message!, conditions, agentExit: exit }), pods: {} }));
    expect(later.agentExit).toEqual(exit);
    expect(cond(later, "Completed")).toEqual(cond(d, "Completed"));
    expect(later.lifecycle).toBe("stopped");
    expect(later.draining).toBeUndefined();
  });

  it("ends Failed when the engine pod itself fails (an eviction), naming the pod's reason", () => {
    const d = decideRun(observe({ previous: started(), pods: { [engine]: { phase: "Failed", ready: false, reason: "Evicted", message: "low on memory" } } }));
    expect(cond(d, "Completed")).toMatchObject({ reason: "EnginePodFailed", message: "the engine pod failed (Evicted): low on memory" });
  });

  it("fails with DeadlineExceeded past spec.deadlines.activeDeadlineSeconds, and wakes up at the deadline before", () => {
    const spec = { deadlines: { activeDeadlineSeconds: 600 } };
    const live = decideRun(observe({ spec, previous: started(), pods: { [sandboxPod]: READY, [engine]: READY }, at: T0 + 100_000 }));
    expect(live.phase).toBe("Running");
    expect(cond(live, "Completed")).toMatchObject({ status: "False", reason: "Running" });
    expect(live.requeueAfterMs).toBe(500_000);
    const past = decideRun(observe({ spec, previous: started(), pods: { [sandboxPod]: READY, [engine]: READY }, at: T0 + 600_000 }));
    expect(past.phase).toBe("Failed");
    expect(past.lifecycle).toBe("stopped");
    expect(past.sandboxes).toEqual([]);
    expect(past.draining).toBe(true);
    expect(cond(past, "Completed")).toMatchObject({ reason: "DeadlineExceeded", message: expect.stringContaining("activeDeadlineSeconds (600s") });
  });

  it("holds the engine pod back while a credential Secret is missing, and looks again", () => {
    const missing = { type: "CredentialsReady", status: "False" as const, reason: "SecretNotFound", message: "credential Secret 'k' not found" };
    const d = decideRun(observe({ previous: started(), pods: { [sandboxPod]: READY }, credentials: missing }));
    expect(d.phase).toBe("Pending");
    expect(d.holdEngine).toBe(true);
    expect(cond(d, "CredentialsReady")).toEqual(missing);
    expect(d.requeueAfterMs).toBe(5000);
  });

  it("never falls back to the engine pod when credentials are in it", () => {
    const warn = snapshotOf(
      { image: "r:1", credentials: [{ secretName: "k" }], sandbox: { kind: "gvisor", image: "alpine:3", onUnavailable: "warn" } },
      { sandbox: { runtimeClasses: { gvisor: "gvisor" } } },
    );
    const d = decideRun(observe({ snapshot: warn, plan: computeSandboxPlan(RUN.name, warn.runPolicy), hasRuntimeClass: () => false }));
    expect(d.phase).toBe("Failed");
    expect(d.hostExec).toBe(false);
  });
});
