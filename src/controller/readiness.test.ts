import { describe, expect, it } from "vitest";
import { RunSpecSchema } from "../api/run.ts";
import type { RunStatus } from "../api/status.ts";
import { computeSandboxPlan } from "../sandbox/sandbox-plan.ts";
import { RUN, snapshotOf } from "../sandbox/test-fixtures.ts";
import type { ConditionDecision } from "./conditions.ts";
import { decidePodSecurityCondition } from "./run/pod-security-condition.ts";
import { decideRunReadiness, decideValidReadiness } from "./readiness.ts";
import { decideRun, type ObservedPod } from "./run/run-decision.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
const boxed = snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3" } });
const plan = computeSandboxPlan(RUN.name, boxed.runPolicy);
const engine = `${RUN.name}-engine`;

function decide(pods: Record<string, ObservedPod>, previous: RunStatus | undefined, at = T0) {
  return decideRun({
    name: RUN.name, previous, snapshot: boxed, plan, hasRuntimeClass: () => true, nowMs: at, nowIso: iso(at),
    spec: RunSpecSchema.parse({ agentRef: { name: "notes" }, deadlines: { sandboxReadySeconds: 10 } }), pods: new Map(Object.entries(pods)),
  });
}

const summary = (conditions: ConditionDecision[]) => conditions.map((c) => [c.type, c.status, c.reason]);

describe("decideRunReadiness", () => {
  it("is Reconciling, not Ready, while the sandbox pods start, with the reason of what it waits for", () => {
    const d = decide({}, undefined);
    expect(summary(decideRunReadiness(d.phase, d.conditions))).toEqual([["Ready", "False", "WaitingForPods"], ["Reconciling", "True", "WaitingForPods"]]);
  });

  it("is Running (Reconciling) while the agent runs, and Ready once it succeeded, with the Completed reason", () => {
    const up = { phase: "Running", ready: true };
    const running = decide({ [plan[0]!.pod]: up, [engine]: up }, { startedAt: iso(T0) });
    expect(summary(decideRunReadiness(running.phase, running.conditions))).toEqual([["Ready", "False", "Running"], ["Reconciling", "True", "Running"]]);
    const done = decide({ [engine]: { phase: "Succeeded", ready: false, agent: { exitCode: 0 } } }, { startedAt: iso(T0), phase: "Running" });
    const ready = decideRunReadiness(done.phase, done.conditions);
    expect(summary(ready)).toEqual([["Ready", "True", "AgentSucceeded"]]);
    expect(ready[0]!.message).toBe("the agent container exited with code 0");
  });

  it("is Stalled with a terminal reason when a sandbox never became ready (no node): kstatus reads Failed", () => {
    const d = decide({}, { startedAt: iso(T0) }, T0 + 10_000);
    expect(d.phase).toBe("Failed");
    const r = decideRunReadiness(d.phase, d.conditions);
    expect(summary(r)).toEqual([["Ready", "False", "SandboxUnavailable"], ["Stalled", "True", "SandboxUnavailable"]]);
    expect(r[0]!.message).toMatch(/^the run is Failed: sandbox unavailable: sandbox pod '.*' not ready within 10s$/);
  });

  it.each([
    ["an Agent that does not exist yet: Reconciling (it may be applied next)", "Pending", "AgentNotFound", "Reconciling"],
    ["an invalid Agent: Stalled until someone fixes it", "Pending", "InvalidSpec", "Stalled"],
    ["a ceiling refusing the mode: Stalled", "Pending", "RefusedByPolicy", "Stalled"],
    ["an invalid Run spec: Failed and Stalled", "Failed", "InvalidSpec", "Stalled"],
  ] as const)("a blocked run, %s", (_n, phase, reason, progress) => {
    const blocked: ConditionDecision = { type: "PolicyResolved", status: "False", reason, message: "m" };
    expect(summary(decideRunReadiness(phase, [blocked]))).toEqual([["Ready", "False", reason], [progress, "True", reason]]);
  });

  it("a Cancelled run is Stalled with reason Cancelled", () => {
    const cancelled: ConditionDecision = { type: "Completed", status: "True", reason: "Cancelled", message: "the Run was cancelled" };
    expect(summary(decideRunReadiness("Cancelled", [cancelled]))).toEqual([["Ready", "False", "Cancelled"], ["Stalled", "True", "Cancelled"]]);
  });
});

describe("decideValidReadiness", () => {
  it("mirrors Valid; an invalid spec is also Stalled, an unknown one (no valid policy) is not", () => {
    expect(summary(decideValidReadiness({ type: "Valid", status: "True", reason: "Valid", message: "valid" }))).toEqual([["Ready", "True", "Valid"]]);
    expect(summary(decideValidReadiness({ type: "Valid", status: "False", reason: "RefusedByPolicy", message: "m" }))).toEqual([["Ready", "False", "RefusedByPolicy"], ["Stalled", "True", "RefusedByPolicy"]]);
    expect(summary(decideValidReadiness({ type: "Valid", status: "Unknown", reason: "InvalidPolicy", message: "m" }))).toEqual([["Ready", "Unknown", "InvalidPolicy"]]);
  });
});

describe("decidePodSecurityCondition", () => {
  it("is True only for enforce=restricted, and says how to fix the rest", () => {
    expect(decidePodSecurityCondition("a", { "pod-security.kubernetes.io/enforce": "restricted" })).toMatchObject({ status: "True", reason: "Restricted" });
    const baseline = decidePodSecurityCondition("a", { "pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted" });
    expect(baseline).toMatchObject({ status: "False", reason: "NamespaceNotRestricted" });
    expect(baseline.message).toContain("pod-security.kubernetes.io/enforce is 'baseline'");
    expect(baseline.message).toContain("kubectl label namespace a pod-security.kubernetes.io/enforce=restricted");
    expect(decidePodSecurityCondition("a", {}).message).toContain("pod-security.kubernetes.io/enforce is unset");
    expect(decidePodSecurityCondition("a", undefined)).toMatchObject({ status: "Unknown", reason: "NamespaceNotObserved" });
  });
});
