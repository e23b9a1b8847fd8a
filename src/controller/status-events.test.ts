import { describe, expect, it } from "vitest";
import type { Condition } from "../api/status.ts";
import type { EventNote, ObjectReference } from "../kube/event-recorder.ts";
import { createTransitionRecorder } from "./status-events.ts";

const c = (type: string, status: Condition["status"], reason: string, message = `${type} ${reason}`): Condition => ({ type, status, reason, message, lastTransitionTime: "t" });
const run: ObjectReference = { apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: "r", namespace: "ns", uid: "u1" };

function recorderWithLog() {
  const recorded: EventNote[] = [];
  return { recorded, record: createTransitionRecorder({ record: (_r, e) => recorded.push(e) }) };
}

describe("createTransitionRecorder", () => {
  it("records each change of Ready once, Normal for progress and success, Warning otherwise", () => {
    const { recorded, record } = recorderWithLog();
    const waiting = [c("Ready", "False", "WaitingForPods")];
    record(run, undefined, [c("Ready", "False", "AgentNotFound")], "Reconcile");
    record(run, [c("Ready", "False", "AgentNotFound")], waiting, "Reconcile");
    // The cache still held the old status: the same transition written twice is not a second event.
    record(run, [c("Ready", "False", "AgentNotFound")], waiting, "Reconcile");
    record(run, waiting, [c("Ready", "True", "AgentSucceeded")], "Reconcile");
    expect(recorded.map((e) => [e.type, e.reason, e.note])).toEqual([
      ["Warning", "AgentNotFound", "Ready AgentNotFound"],
      ["Normal", "WaitingForPods", "Ready WaitingForPods"],
      ["Normal", "AgentSucceeded", "Ready AgentSucceeded"],
    ]);
  });

  it("records a return to an earlier state again (a repeat the recorder turns into a series)", () => {
    const { recorded, record } = recorderWithLog();
    const a = [c("Ready", "False", "SecretNotFound")];
    const b = [c("Ready", "False", "WaitingForPods")];
    record(run, undefined, a, "Reconcile");
    record(run, a, b, "Reconcile");
    record(run, b, a, "Reconcile");
    expect(recorded.map((e) => e.reason)).toEqual(["SecretNotFound", "WaitingForPods", "SecretNotFound"]);
  });

  it("warns when a Run becomes less protected than asked, and says nothing of conditions in their normal state", () => {
    const { recorded, record } = recorderWithLog();
    record(run, undefined, [
      c("SandboxReady", "False", "FellBackToHost"), c("NetworkIsolated", "False", "NetworkNotEnforced"),
      c("PodSecurityEnforced", "False", "NamespaceNotRestricted"), c("CredentialsReady", "True", "SecretsFound"), c("PodSecurityEnforced", "True", "Restricted"),
    ], "Reconcile");
    expect(recorded.map((e) => [e.type, e.reason])).toEqual([["Warning", "FellBackToHost"], ["Warning", "NetworkNotEnforced"], ["Warning", "NamespaceNotRestricted"]]);
  });

  it("records nothing without a sink", () => {
    expect(() => createTransitionRecorder(undefined)(run, undefined, [c("Ready", "False", "X")], "Reconcile")).not.toThrow();
  });
});
