import { describe, expect, it } from "vitest";
import { RunSpecSchema } from "../../api/run.ts";
import { computeSandboxPlan } from "../../sandbox/sandbox-plan.ts";
import { RUN, snapshotOf } from "../../sandbox/test-fixtures.ts";
import { isSameStatus } from "../conditions.ts";
import { decideRun } from "./run-decision.ts";
import { buildBlockedRunStatus, buildRunStatus, overlayControllerFields, pickControllerFields } from "./run-status.ts";

const NOW = "2026-01-01T00:00:00Z";
const SHA = "ab".repeat(32);
const boxed = { ...snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3", network: false } }), sha256: SHA };

/** The status the first pass of a pinned Run writes, as the API server gives it back (the sidecar's fields beside it). */
function firstPass() {
  const decision = decideRun({
    name: RUN.name, previous: undefined, snapshot: boxed, plan: computeSandboxPlan(RUN.name, boxed.runPolicy), pods: new Map(),
    hasRuntimeClass: () => true, nowMs: Date.parse(NOW), nowIso: NOW, spec: RunSpecSchema.parse({ agentRef: { name: "notes" } }),
  });
  return buildRunStatus({ generation: 1, previous: undefined, nowIso: NOW }, { name: RUN.name, snapshot: boxed, decision });
}

describe("the controller's part of a Run's status", () => {
  it("keeps every field the controller writes, the snapshot's digest included, so a settled Run's status is not written again", () => {
    const written = firstPass();
    expect(written.snapshotSha256).toBe(SHA);
    const cached = { ...written, stage: "survey", gateDecisions: { read_path: 1 } };
    expect(pickControllerFields(cached)).toEqual(written);
    expect(isSameStatus(pickControllerFields(cached), written)).toBe(true);
  });

  it("keeps the digest of a blocked Run's accepted snapshot", () => {
    const blocked = buildBlockedRunStatus({ generation: 1, previous: undefined, nowIso: NOW }, { phase: "Failed", reason: "CredentialsOnHost", message: "credentials reach the agent container", snapshotSha256: SHA });
    expect(isSameStatus(pickControllerFields(blocked), blocked)).toBe(true);
  });

  it("overlays the written digest on a cached status that has not seen the write", () => {
    const written = firstPass();
    const overlaid = overlayControllerFields({ stage: "survey", snapshotSha256: "cd".repeat(32) }, written);
    expect(overlaid).toEqual({ ...written, stage: "survey" });
  });
});
